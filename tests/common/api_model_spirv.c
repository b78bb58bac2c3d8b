/* The model's base kernels (produce, consume, step) as SPIR-V words, compiled from fuzz/kernels/
 * by glslc at build time: a run opens a device often (every episode, reopen and input), and
 * compiling their GLSL with shaderc each time would cost more than the rest of it. The compile
 * queue and kernel steps of the model still compile GLSL. */
#include "api_model.h"

static const uint32_t produce_spirv[] =
#include "produce.inc"
    ;
static const uint32_t consume_spirv[] =
#include "consume.inc"
    ;
static const uint32_t step_spirv[] =
#include "step.inc"
    ;

void api_model_use_spirv(api_model_config *config)
{
    config->spirv[0] = produce_spirv;
    config->spirv[1] = consume_spirv;
    config->spirv[2] = step_spirv;
    config->spirv_words[0] = sizeof produce_spirv / sizeof produce_spirv[0];
    config->spirv_words[1] = sizeof consume_spirv / sizeof consume_spirv[0];
    config->spirv_words[2] = sizeof step_spirv / sizeof step_spirv[0];
}
