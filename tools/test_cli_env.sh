#!/usr/bin/env bash
# The `cubec` tool against its environment (issue 23, what a new user hits): a stray ./cubec.ini
# with an unknown key warns and the program goes on, while a malformed value still fails naming
# file, line and key; a missing Vulkan driver says what to install, in `cubec info` and in
# cubec_device_open (through `cubec run`); the log says when the validation layer is on.
#
# usage: test_cli_env.sh PATH/TO/cubec
set -u

. "$(dirname "$0")/cli_test_lib.sh"
# The ini file must be the one found in the working directory.
unset CUBEC_CONFIG

cat >"$TMP/double.comp" <<'EOF'
#version 450
layout(local_size_x = 64) in;
layout(set = 0, binding = 0) buffer O { uint o[]; };
void main() { o[gl_GlobalInvocationID.x] = 2u * gl_GlobalInvocationID.x; }
EOF
RUN_DOUBLE=(run "$TMP/double.comp" --groups 1 --buf zero:256 --print 4 --print-u32)

# --- A stray ./cubec.ini ------------------------------------------------------------------------
# Found in the working directory: an unknown key is a warning naming the file, the line and the
# nearest key, once, and the program runs; its other keys still apply.
mkdir -p "$TMP/stray"
cd "$TMP/stray" || exit 1
printf '; a stray file\n[log]\nlevl = info\n[device]\ntasks_max = 8\n' >cubec.ini
run_expect 0 stray_info "$CUBEC" info &&
    expect_in stray_info "[default]" \
        "config cubec.ini:3: unknown key [log] levl, ignored (did you mean [log] level?"
[ "$(count_in stray_info "unknown key")" = 1 ] ||
    fail "stray_info: the unknown key was not warned about exactly once"
run_expect 0 stray_run "$CUBEC" "${RUN_DOUBLE[@]}" &&
    expect_in stray_run "binding 0 (read-write, 256 bytes, u32): 0 2 4 6 ..." \
        "unknown key [log] levl"
# A malformed value still fails, naming the file, the line and the key.
printf '[log]\nlevel = info\n\n[device]\ntasks_max = lots\n' >cubec.ini
run_expect 1 stray_bad "$CUBEC" "${RUN_DOUBLE[@]}" &&
    expect_in stray_bad "config cubec.ini:5: [device] tasks_max = 'lots' is not an integer"
rm -f cubec.ini
cd "$TMP" || exit 1

# --- No Vulkan driver ---------------------------------------------------------------------------
# The loader finds no ICD: the message says what to install and how to check, from cubec info
# (cubec_device_get_count) and from cubec run (cubec_device_open).
for cmd in info run; do
    args=(info)
    [ $cmd = run ] && args=("${RUN_DOUBLE[@]}")
    VK_ICD_FILENAMES=/nonexistent.json VK_DRIVER_FILES=/nonexistent.json \
        run_expect 1 no_driver_$cmd "$CUBEC" "${args[@]}" &&
        expect_in no_driver_$cmd "VK_ERROR_INCOMPATIBLE_DRIVER" "mesa-vulkan-drivers" \
            "GPU's Vulkan driver" "vulkaninfo"
done

# --- The validation layer, confirmed in the log -------------------------------------------------
# One info line at device open when it is on, none when it is off.
if CUBEC_VALIDATION=1 CUBEC_LOG_LEVEL=info run_expect 0 validation_on "$CUBEC" "${RUN_DOUBLE[@]}"; then
    [ "$(count_in validation_on "info device] validation layer on")" = 1 ] ||
        fail "validation_on: no single 'validation layer on' line"
fi
if CUBEC_VALIDATION=0 CUBEC_LOG_LEVEL=info run_expect 0 validation_off "$CUBEC" "${RUN_DOUBLE[@]}"; then
    [ "$(count_in validation_off "validation layer on")" = 0 ] ||
        fail "validation_off: the log says the layer is on"
fi

cli_test_end test_cli_env
