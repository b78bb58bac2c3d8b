/* The parts of the module, one registration function each (pyc_register_<name>, defined in
 * <name>.c), in the order module.c runs them: errors first (every other part raises them),
 * then the types that later ones refer to. A new file adds its line here and nothing else. */
PYC_PART(errors)
PYC_PART(device)
PYC_PART(stream)
PYC_PART(buffer)
PYC_PART(kernel)
PYC_PART(launch)
PYC_PART(future)
PYC_PART(host)
PYC_PART(dlpack)
PYC_PART(bench)
