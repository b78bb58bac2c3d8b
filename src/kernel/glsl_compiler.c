/* GLSL -> SPIR-V with shaderc (see glsl_compiler.h).
 *
 * shaderc is linked from its static archives (Debian's shared libshaderc is broken, see
 * PLATFORM.md). Its predefined macros become "#define NAME VALUE" lines in glslang's preamble,
 * which is why a function-like name such as "CUBEC_INFO(M)" works and why the user's line
 * numbers are unchanged. A define name or value with a newline would split that line and inject
 * text into the preamble, so such defines are refused up front. */
#include "kernel/glsl_compiler.h"

#include "base/strfmt.h"
#include "kernel/reflect.h"

#include <shaderc/shaderc.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define STRINGIFY_(x) #x
#define STRINGIFY(x) STRINGIFY_(x)

/* The few SPIR-V numbers the word walks below need (from the SPIR-V specification). */
#define SPIRV_HEADER_WORDS 5u
#define SPIRV_OP_ENTRY_POINT 15u
#define SPIRV_OP_VARIABLE 59u
#define SPIRV_OP_DECORATE 71u
#define SPIRV_DECORATION_BINDING 33u
#define SPIRV_DECORATION_DESCRIPTOR_SET 34u
#define SPIRV_STORAGE_PUSH_CONSTANT 9u

struct glsl_compiler {
    shaderc_compiler_t shaderc;
};

/* The two shapes of the metadata block. std430 for push constants keeps the layout identical to
 * the storage-buffer form, so a launch packs the same bytes either way. */
static const char info_push_constants[] =
    "layout(push_constant, std430) uniform CubecInfo { M } info;";
static const char info_storage_buffer[] =
    "layout(std430, set = 0, binding = CUBEC_INFO_BINDING) readonly buffer CubecInfo { M } info;";
/* A uniform block with std430 offsets needs GL_EXT_scalar_block_layout, which glsl_compile
 * enables right after the #version line (with_head). */
static const char info_uniform_buffer[] =
    "layout(std430, set = 0, binding = CUBEC_INFO_BINDING) uniform CubecInfo { M } info;";

/* Names cubec defines itself: a user define of one of them would be a redefinition error
 * reported against the preamble, which the user never sees, so it is refused with a clear
 * message instead. */
static const char *const reserved_names[] = {"CUBEC_INFO", "CUBEC_INFO_BINDING",
                                             "CUBEC_INFO_IN_PUSH_CONSTANTS"};

cubec_status glsl_compiler_create(glsl_compiler **out_compiler)
{
    if (!out_compiler) return INVALID_ARG("glsl_compiler_create: out_compiler is NULL");
    *out_compiler = NULL;
    glsl_compiler *c = calloc(1, sizeof *c);
    if (!c)
        return status_make(CUBEC_OUT_OF_MEMORY, "glsl_compiler_create: host out of memory (%zu B)",
                           sizeof *c);
    c->shaderc = shaderc_compiler_initialize();
    if (!c->shaderc) {
        free(c);
        return status_make(CUBEC_INTERNAL, "glsl_compiler_create: shaderc_compiler_initialize "
                                           "failed");
    }
    *out_compiler = c;
    return NULL;
}

void glsl_compiler_destroy(glsl_compiler *compiler)
{
    if (!compiler) return;
    shaderc_compiler_release(compiler->shaderc);
    free(compiler);
}

static int is_ident_start(char ch)
{
    return (ch >= 'A' && ch <= 'Z') || (ch >= 'a' && ch <= 'z') || ch == '_';
}

static int is_ident_char(char ch)
{
    return is_ident_start(ch) || (ch >= '0' && ch <= '9');
}

/* Accepts an identifier, optionally followed by a parameter list "(...)" ending the name, so
 * function-like user macros work the same way CUBEC_INFO(M) does. */
static int define_name_ok(const char *name, size_t *out_ident_len)
{
    if (!is_ident_start(name[0])) return 0;
    size_t n = 1;
    while (is_ident_char(name[n]))
        n++;
    *out_ident_len = n;
    if (name[n] == '\0') return 1;
    if (name[n] != '(') return 0;
    size_t len = strlen(name);
    if (name[len - 1] != ')') return 0;
    return strpbrk(name, "\n\r") == NULL;
}

static cubec_status check_defines(const cubec_define *defines, uint32_t define_count,
                                  const char *entry_point)
{
    if (define_count > 0 && !defines)
        return INVALID_ARG("glsl_compile: defines is NULL but define_count is %u", define_count);
    for (uint32_t i = 0; i < define_count; i++) {
        const char *name = defines[i].name;
        if (!name) return INVALID_ARG("glsl_compile: defines[%u].name is NULL", i);
        size_t ident_len = 0;
        if (!define_name_ok(name, &ident_len))
            return INVALID_ARG("glsl_compile: defines[%u].name '%s' is not a macro name "
                               "(an identifier, optionally with a parameter list)",
                               i, name);
        for (size_t r = 0; r < sizeof reserved_names / sizeof reserved_names[0]; r++) {
            if (strlen(reserved_names[r]) == ident_len &&
                strncmp(name, reserved_names[r], ident_len) == 0)
                return INVALID_ARG("glsl_compile: defines[%u].name '%s' is reserved: cubec "
                                   "defines it",
                                   i, name);
        }
        if (strcmp(entry_point, "main") != 0 && strlen(entry_point) == ident_len &&
            strncmp(name, entry_point, ident_len) == 0)
            return INVALID_ARG("glsl_compile: defines[%u].name '%s' is the entry point's name", i,
                               name);
        if (defines[i].value && strpbrk(defines[i].value, "\n\r"))
            return INVALID_ARG("glsl_compile: defines[%u].value (for '%s') contains a line break",
                               i, name);
    }
    return NULL;
}

static void add_macro(shaderc_compile_options_t options, const char *name, const char *value)
{
    shaderc_compile_options_add_macro_definition(options, name, strlen(name), value,
                                                 value ? strlen(value) : 0);
}

static const char *info_block(glsl_info_form form)
{
    switch (form) {
    case GLSL_INFO_PUSH: return info_push_constants;
    case GLSL_INFO_UNIFORM: return info_uniform_buffer;
    case GLSL_INFO_STORAGE: break;
    }
    return info_storage_buffer;
}

/* The state of #include during one shaderc run: the snapshot that serves the files, and the
 * chain of files being included (chain[d] is the file included at depth d; depth 0 is the
 * kernel's source), from which a cycle is told. */
typedef struct includer {
    glsl_sources *sources;
    const char *file_name; /* the kernel's source in diagnostics */
    const glsl_source_file *chain[GLSL_MAX_INCLUDE_DEPTH + 1];
    int stopped; /* nesting passed the limit: every later include fails at once */
    /* The include that passed it, and why: shaderc asks again for a quoted name that failed (as
     * <name>), and only the second answer is reported, so it gets the same message. */
    size_t stop_depth;
    char stop_name[256];
    char *stop_message;
} includer;

/* A result and the message it may own. */
typedef struct include_answer {
    shaderc_include_result result;
    char *message;
} include_answer;

static shaderc_include_result *include_failure(include_answer *a, char *message)
{
    static const char no_memory[] = "not included: host out of memory";
    a->message = message;
    a->result.source_name = "";
    a->result.source_name_length = 0;
    a->result.content = message ? message : no_memory;
    a->result.content_length = strlen(a->result.content);
    return &a->result;
}

/* The chain of includes that reached the depth limit, up to the first file that repeats (the
 * cycle), as "a.comp -> b.glsl -> c.glsl -> b.glsl". */
static char *cycle_message(const includer *inc, const glsl_source_file *next)
{
    const glsl_source_file *path[GLSL_MAX_INCLUDE_DEPTH + 2];
    size_t n = 0;
    for (size_t d = 1; d <= GLSL_MAX_INCLUDE_DEPTH; d++)
        path[n++] = inc->chain[d];
    path[n++] = next;
    size_t end = n, repeat = n;
    for (size_t i = 0; i < n && repeat == n; i++)
        for (size_t j = 0; j < i; j++)
            if (path[i] && path[i] == path[j]) {
                end = i + 1;
                repeat = i;
                break;
            }
    char *text = strfmt("%s", inc->file_name);
    for (size_t i = 0; text && i < end; i++) {
        char *more = strfmt("%s -> %s", text, path[i] ? path[i]->path : "?");
        free(text);
        text = more;
    }
    if (!text) return NULL;
    char *out =
        repeat < n
            ? strfmt("include cycle: %s (includes nest at most %d deep; guard the file "
                     "with #ifndef/#define)",
                     text, GLSL_MAX_INCLUDE_DEPTH)
            : strfmt("includes nest deeper than %d: %s -> ...", GLSL_MAX_INCLUDE_DEPTH, text);
    free(text);
    return out;
}

static shaderc_include_result *include_resolve(void *user, const char *requested, int type,
                                               const char *requesting, size_t depth)
{
    (void)requesting; /* the depth says which file asks: the chain's */
    includer *inc = user;
    include_answer *a = calloc(1, sizeof *a);
    if (!a) return NULL;
    if (inc->stopped)
        return include_failure(
            a,
            depth == inc->stop_depth && strcmp(requested, inc->stop_name) == 0 && inc->stop_message
                ? strfmt("%s", inc->stop_message)
                : strfmt("not included: the include cycle (or nesting too deep) reported "
                         "first"));
    const glsl_source_file *requester =
        depth >= 2 && depth - 1 <= GLSL_MAX_INCLUDE_DEPTH ? inc->chain[depth - 1] : NULL;
    const char *why = "not found: no directory to search (the kernel has no glsl_path and no "
                      "include_dirs)";
    const glsl_source_file *file =
        inc->sources ? glsl_sources_resolve(inc->sources, requester, requested,
                                            type == shaderc_include_type_standard, &why)
                     : NULL;
    if (!file) return include_failure(a, strfmt("%s", why));
    if (depth > GLSL_MAX_INCLUDE_DEPTH) {
        /* glslang has no limit of its own: an unguarded cycle would recurse until memory runs
         * out, and a file that includes itself twice would double the work per level. */
        inc->stopped = 1;
        inc->stop_depth = depth;
        snprintf(inc->stop_name, sizeof inc->stop_name, "%s", requested);
        free(inc->stop_message);
        inc->stop_message = cycle_message(inc, file);
        return include_failure(a, inc->stop_message ? strfmt("%s", inc->stop_message) : NULL);
    }
    inc->chain[depth] = file;
    a->result.source_name = file->path;
    a->result.source_name_length = strlen(file->path);
    a->result.content = file->text;
    a->result.content_length = file->length;
    return &a->result;
}

static void include_release(void *user, shaderc_include_result *result)
{
    (void)user;
    include_answer *a = (include_answer *)result; /* result is the first member */
    if (!a) return;
    free(a->message);
    free(a);
}

static shaderc_compile_options_t make_options(const cubec_define *defines, uint32_t define_count,
                                              const char *entry_point, int optimize,
                                              glsl_info_form form, includer *inc)
{
    shaderc_compile_options_t options = shaderc_compile_options_initialize();
    if (!options) return NULL;
    shaderc_compile_options_set_source_language(options, shaderc_source_language_glsl);
    /* Vulkan 1.2 guarantees SPIR-V 1.5; nothing newer is needed and both lavapipe and the
     * NVIDIA driver accept it. */
    shaderc_compile_options_set_target_env(options, shaderc_target_env_vulkan,
                                           shaderc_env_version_vulkan_1_2);
    shaderc_compile_options_set_target_spirv(options, shaderc_spirv_version_1_5);
    shaderc_compile_options_set_optimization_level(options,
                                                   optimize ? shaderc_optimization_level_performance
                                                            : shaderc_optimization_level_zero);
    add_macro(options, "CUBEC_INFO(M)", info_block(form));
    add_macro(options, "CUBEC_INFO_BINDING", STRINGIFY(CUBEC_INFO_BINDING));
    add_macro(options, "CUBEC_INFO_IN_PUSH_CONSTANTS", form == GLSL_INFO_PUSH ? "1" : "0");
    /* glslang compiles only a function named main from GLSL: another entry point's function is
     * made main here (and the SPIR-V entry point renamed back after compiling). Other functions
     * in the source, such as further kernels, are left alone. */
    if (strcmp(entry_point, "main") != 0) add_macro(options, entry_point, "main");
    for (uint32_t i = 0; i < define_count; i++)
        add_macro(options, defines[i].name, defines[i].value);
    /* Always set: without an includer glslang refuses #include with a message that names no
     * file and no directory. */
    memset(inc->chain, 0, sizeof inc->chain);
    inc->stopped = 0;
    free(inc->stop_message);
    inc->stop_message = NULL;
    shaderc_compile_options_set_include_callbacks(options, include_resolve, include_release, inc);
    return options;
}

/* shaderc's diagnostics end with a newline; the status message should not. */
static int trimmed_length(const char *text)
{
    size_t n = strlen(text);
    while (n > 0 && (text[n - 1] == '\n' || text[n - 1] == '\r' || text[n - 1] == ' '))
        n--;
    return n > (size_t)1 << 30 ? 1 << 30 : (int)n;
}

static cubec_status compile_failure(const char *name, const char *entry_point,
                                    shaderc_compilation_result_t result)
{
    const char *diag = shaderc_result_get_error_message(result);
    shaderc_compilation_status st = shaderc_result_get_compilation_status(result);
    if (!diag || !diag[0])
        return status_make(CUBEC_COMPILE_FAILED,
                           "kernel '%s': GLSL compilation failed:\nshaderc status %d, no "
                           "diagnostics",
                           name, (int)st);
    /* glslang reports a missing entry function without naming it; for a non-main entry point
     * (renamed to main by a macro, see below) say which function was looked for. A source that
     * also defines main then has two: say why. */
    const char *hint = NULL, *hint_end = NULL;
    if (strcmp(entry_point, "main") != 0 && strstr(diag, "Missing entry point")) {
        hint = "\n(no function named by entry_point '";
        hint_end = "' was found)";
    } else if (strcmp(entry_point, "main") != 0 &&
               strstr(diag, "'main' : function already has a body")) {
        hint = "\n(entry_point '";
        hint_end = "' is compiled as main, so the source may not define main too)";
    } else if (strcmp(entry_point, "main") != 0 && strstr(diag, "'main'")) {
        hint = "\n(entry_point '";
        hint_end = "' is compiled as main: 'main' in these messages is the entry point)";
    }
    return status_make(CUBEC_COMPILE_FAILED, "kernel '%s': GLSL compilation failed:\n%.*s%s%s%s",
                       name, trimmed_length(diag), diag, hint ? hint : "", hint ? entry_point : "",
                       hint ? hint_end : "");
}

/* glslang compiles a source without #version as version 110, and for versions below 150 its
 * compute built-ins fail to parse; it then prints several thousand lines of built-in declarations
 * to stdout, which a library must never do. Such sources are refused here, before shaderc runs,
 * with glslang's own wording and a line number. Only comments and white space may precede
 * #version, so a small scan finds it: the first thing of the source that is not blank or a
 * comment, and its line. */
static const char *first_token(const char *source, int *out_line)
{
    const char *p = source;
    int line = 1;
    for (;;) {
        if (*p == '\n') {
            line++;
            p++;
        } else if (*p == ' ' || *p == '\t' || *p == '\r' || *p == '\f' || *p == '\v') {
            p++;
        } else if (p[0] == '/' && p[1] == '/') {
            while (*p && *p != '\n')
                p++;
        } else if (p[0] == '/' && p[1] == '*') {
            const char *end = strstr(p + 2, "*/");
            const char *stop = end ? end + 2 : p + strlen(p);
            for (; p < stop; p++)
                if (*p == '\n') line++;
        } else {
            break;
        }
    }
    *out_line = line;
    return p;
}

/* Where the #version directive's name ends, or NULL when the source does not start with one. */
static const char *version_directive(const char *p)
{
    if (*p != '#') return NULL;
    p++;
    while (*p == ' ' || *p == '\t')
        p++;
    return strncmp(p, "version", 7) == 0 && !is_ident_char(p[7]) ? p + 7 : NULL;
}

static cubec_status check_version(const char *name, const char *file_name, const char *source)
{
    static const char need[] = "compute shaders require es profile with version 310 or above, "
                               "or non-es profile with version 420 or above";
    int line = 1;
    const char *q = version_directive(first_token(source, &line));
    if (q) {
        while (*q == ' ' || *q == '\t')
            q++;
        long version = strtol(q, NULL, 10);
        if (version >= 150) return NULL; /* glslang diagnoses the rest well */
        return status_make(CUBEC_COMPILE_FAILED,
                           "kernel '%s': GLSL compilation failed:\n%s:%d: error: #version %ld: %s",
                           name, file_name, line, version, need);
    }
    return status_make(CUBEC_COMPILE_FAILED,
                       "kernel '%s': GLSL compilation failed:\n%s:%d: error: the source must start "
                       "with a #version directive (e.g. #version 450): %s",
                       name, file_name, line, need);
}

/* Whether `name` can stand in a #line directive's string: glslang reads it without escapes. */
static int line_name_ok(const char *name)
{
    return strpbrk(name, "\"\\\n\r") == NULL;
}

/* The source with text inserted right after its #version line: GL_EXT_scalar_block_layout when
 * the metadata is a uniform block with std430 offsets (`scalar`), then the caller's preamble
 * (named "<preamble>" in diagnostics), then a #line directive so that diagnostics keep the
 * source's own line numbers and name. NULL when the host is out of memory; check_version has seen
 * the #version. */
static char *with_head(const char *source, int scalar, const char *preamble, const char *file_name)
{
    int line = 1;
    const char *q = version_directive(first_token(source, &line));
    const char *eol = q ? strchr(q, '\n') : NULL;
    size_t head = eol ? (size_t)(eol + 1 - source) : strlen(source);
    int named = preamble && line_name_ok(file_name);
    size_t plen = preamble ? strlen(preamble) : 0;
    char *middle = strfmt("%s%s%s%s%s%s#line %d%s%s%s\n", eol ? "" : "\n",
                          scalar ? "#extension GL_EXT_scalar_block_layout : require\n" : "",
                          named ? "#line 1 \"<preamble>\"\n" : "", preamble ? preamble : "",
                          plen && preamble[plen - 1] != '\n' ? "\n" : "", "", line + 1,
                          named ? " \"" : "", named ? file_name : "", named ? "\"" : "");
    if (!middle) return NULL;
    char *out = strfmt("%.*s%s%s", (int)head, source, middle, source + head);
    free(middle);
    return out;
}

/* One shaderc run. */
static cubec_status compile_once(glsl_compiler *compiler, const char *name, const char *source,
                                 const cubec_define *defines, uint32_t define_count,
                                 const char *entry_point, int optimize, glsl_info_form form,
                                 includer *inc, uint32_t **out_words, size_t *out_word_count)
{
    shaderc_compile_options_t options =
        make_options(defines, define_count, entry_point, optimize, form, inc);
    if (!options)
        return status_make(CUBEC_OUT_OF_MEMORY,
                           "kernel '%s': host out of memory creating shaderc options", name);
    /* The kernel's name (or path) is the "file name" in diagnostics: "<name>:<line>: error: ...".
     * The entry point passed here is ignored by glslang for GLSL; the GLSL function is main. */
    shaderc_compilation_result_t result =
        shaderc_compile_into_spv(compiler->shaderc, source, strlen(source), shaderc_compute_shader,
                                 inc->file_name, "main", options);
    shaderc_compile_options_release(options);
    if (!result)
        return status_make(CUBEC_OUT_OF_MEMORY,
                           "kernel '%s': host out of memory in shaderc_compile_into_spv", name);

    cubec_status status = NULL;
    size_t bytes = shaderc_result_get_length(result);
    if (shaderc_result_get_compilation_status(result) != shaderc_compilation_status_success) {
        status = compile_failure(name, entry_point, result);
    } else if (bytes < sizeof(uint32_t) * SPIRV_HEADER_WORDS || bytes % 4 != 0) {
        status = status_make(CUBEC_INTERNAL,
                             "kernel '%s': shaderc returned %zu bytes of SPIR-V, not a whole "
                             "module",
                             name, bytes);
    } else {
        uint32_t *words = malloc(bytes);
        if (!words) {
            status =
                status_make(CUBEC_OUT_OF_MEMORY,
                            "kernel '%s': host out of memory for %zu B of SPIR-V", name, bytes);
        } else {
            memcpy(words, shaderc_result_get_bytes(result), bytes);
            *out_words = words;
            *out_word_count = bytes / 4;
        }
    }
    shaderc_result_release(result);
    return status;
}

/* What a launch binds, as far as -O could change it: the set-0 bindings below 64 and whether a
 * push-constant block exists. */
typedef struct resource_signature {
    uint64_t set0_bindings;
    int push_constants;
} resource_signature;

/* Walks the instructions of a module shaderc just produced (so well-formed). Returns 0 if the
 * module cannot be read that way, so the caller takes the safe path. */
static int scan_resources(const uint32_t *words, size_t word_count, resource_signature *out)
{
    memset(out, 0, sizeof *out);
    if (!words || word_count < SPIRV_HEADER_WORDS) return 0;
    uint32_t bound = words[3];
    if (bound == 0 || bound > (1u << 22)) return 0;
    /* Decorations precede variables in a module, so one pass can resolve each variable. */
    uint32_t *binding = calloc(bound, sizeof *binding); /* binding + 1, 0 = none */
    uint32_t *set = calloc(bound, sizeof *set);
    int ok = binding && set;
    for (size_t i = SPIRV_HEADER_WORDS; ok && i < word_count;) {
        uint32_t count = words[i] >> 16, opcode = words[i] & 0xffffu;
        if (count == 0 || count > word_count - i) {
            ok = 0;
            break;
        }
        if (opcode == SPIRV_OP_DECORATE && count >= 4 && words[i + 1] < bound) {
            if (words[i + 2] == SPIRV_DECORATION_BINDING) binding[words[i + 1]] = words[i + 3] + 1;
            if (words[i + 2] == SPIRV_DECORATION_DESCRIPTOR_SET) set[words[i + 1]] = words[i + 3];
        } else if (opcode == SPIRV_OP_VARIABLE && count >= 4 && words[i + 2] < bound) {
            uint32_t id = words[i + 2], storage = words[i + 3];
            if (storage == SPIRV_STORAGE_PUSH_CONSTANT) out->push_constants = 1;
            if (binding[id] != 0 && binding[id] - 1 < 64 && set[id] == 0)
                out->set0_bindings |= (uint64_t)1 << (binding[id] - 1);
        }
        i += count;
    }
    free(binding);
    free(set);
    return ok;
}

/* spirv-opt at the performance level deletes resources the code never touches, which would
 * change what a launch binds (a gap in the bindings, or a missing info block) depending on -O.
 * shaderc 2023.2 cannot preserve bindings and SPIRV-Tools 2023.1 has no C optimizer API, so when
 * -O drops a resource the unoptimized module is used instead: drivers optimize anyway. */
static int optimization_kept_resources(const uint32_t *plain, size_t plain_count,
                                       const uint32_t *opt, size_t opt_count)
{
    resource_signature a, b;
    if (!scan_resources(plain, plain_count, &a) || !scan_resources(opt, opt_count, &b)) return 0;
    return (a.set0_bindings & ~b.set0_bindings) == 0 && (!a.push_constants || b.push_constants);
}

/* One token of preprocessed GLSL from *p (before `end`): an identifier or number, or a single
 * punctuation character. White space and directive lines (#version, #extension, #line) are
 * skipped. Returns the token's length, 0 at the end. */
static size_t next_token(const char **p, const char *end, const char **out_start)
{
    const char *q = *p;
    for (;;) {
        while (q < end && (*q == ' ' || *q == '\t' || *q == '\r' || *q == '\n'))
            q++;
        if (q < end && *q == '#') {
            while (q < end && *q != '\n')
                q++;
            continue;
        }
        break;
    }
    *out_start = q;
    if (q >= end) {
        *p = q;
        return 0;
    }
    const char *t = q;
    if (is_ident_char(*q))
        while (t < end && is_ident_char(*t))
            t++;
    else
        t++;
    *p = t;
    return (size_t)(t - q);
}

static int token_is(const char *start, size_t len, const char *text)
{
    return len == strlen(text) && memcmp(start, text, len) == 0;
}

/* Whether preprocessed GLSL defines the function `void <name>()` (or `void <name>(void)`) with a
 * body: the shape an entry point must have. A declaration without a body, a call or a variable of
 * that name does not count. */
static int defines_entry_function(const char *text, size_t length, const char *name)
{
    enum { KEEP = 6 };
    const char *start[KEEP] = {0};
    size_t len[KEEP] = {0};
    const char *p = text, *end = text + length;
    for (;;) {
        const char *t;
        size_t n = next_token(&p, end, &t);
        if (n == 0) return 0;
        memmove(start, start + 1, (KEEP - 1) * sizeof start[0]);
        memmove(len, len + 1, (KEEP - 1) * sizeof len[0]);
        start[KEEP - 1] = t;
        len[KEEP - 1] = n;
        if (!token_is(t, n, "{") || !token_is(start[4], len[4], ")")) continue;
        /* void name ( ) {   or   void name ( void ) { */
        if (token_is(start[3], len[3], "(") && token_is(start[2], len[2], name) &&
            token_is(start[1], len[1], "void"))
            return 1;
        if (token_is(start[3], len[3], "void") && token_is(start[2], len[2], "(") &&
            token_is(start[1], len[1], name) && token_is(start[0], len[0], "void"))
            return 1;
    }
}

/* glslang compiles the function named main; another entry point's function is made main by a
 * macro (make_options). When the source has no function of that name but has a main, the macro
 * changes nothing and main would silently run as the kernel. So for such an entry point the
 * source is preprocessed without that macro (with the user's defines, so #ifdef'd code counts
 * as the compiler sees it) and must define the function. */
static cubec_status check_entry_function(glsl_compiler *compiler, const char *name,
                                         const char *source, const cubec_define *defines,
                                         uint32_t define_count, const char *entry_point,
                                         glsl_info_form form, includer *inc)
{
    shaderc_compile_options_t options = make_options(defines, define_count, "main", 0, form, inc);
    if (!options)
        return status_make(CUBEC_OUT_OF_MEMORY,
                           "kernel '%s': host out of memory creating shaderc options", name);
    shaderc_compilation_result_t result = shaderc_compile_into_preprocessed_text(
        compiler->shaderc, source, strlen(source), shaderc_compute_shader, inc->file_name, "main",
        options);
    shaderc_compile_options_release(options);
    if (!result)
        return status_make(CUBEC_OUT_OF_MEMORY,
                           "kernel '%s': host out of memory preprocessing the source", name);
    cubec_status status = NULL;
    /* The source compiled, so it preprocesses; should it not, the compilation's verdict stands. */
    if (shaderc_result_get_compilation_status(result) == shaderc_compilation_status_success &&
        !defines_entry_function(shaderc_result_get_bytes(result), shaderc_result_get_length(result),
                                entry_point))
        status = status_make(CUBEC_COMPILE_FAILED,
                             "kernel '%s': entry_point '%s' names no function of the GLSL source "
                             "(no definition of void %s() after preprocessing); the source's main "
                             "is not run in its place",
                             name, entry_point, entry_point);
    shaderc_result_release(result);
    return status;
}

/* glslang always names a GLSL entry point "main" in SPIR-V. For another entry_point the source's
 * function of that name became main through a macro; here the OpEntryPoint is renamed back, so
 * reflection and pipeline creation find the name the user gave. */
static cubec_status rename_entry_point(const char *name, const char *entry_point,
                                       uint32_t **words_io, size_t *count_io)
{
    uint32_t *words = *words_io;
    size_t count = *count_io;
    for (size_t i = SPIRV_HEADER_WORDS; i < count;) {
        uint32_t n = words[i] >> 16;
        if (n == 0 || n > count - i) break;
        if ((words[i] & 0xffffu) == SPIRV_OP_ENTRY_POINT && n >= 4 &&
            strncmp((const char *)&words[i + 3], "main", (size_t)(n - 3) * 4) == 0) {
            size_t old_name_words = 2; /* "main\0" padded */
            size_t new_name_words = strlen(entry_point) / 4 + 1;
            size_t new_n = n - old_name_words + new_name_words;
            if (new_n > 0xffffu) break;
            size_t new_count = count - n + new_n;
            uint32_t *out = calloc(new_count, sizeof *out);
            if (!out)
                return status_make(CUBEC_OUT_OF_MEMORY,
                                   "kernel '%s': host out of memory renaming the entry point",
                                   name);
            memcpy(out, words, i * sizeof *out);
            out[i] = (uint32_t)(new_n << 16) | SPIRV_OP_ENTRY_POINT;
            out[i + 1] = words[i + 1];
            out[i + 2] = words[i + 2];
            /* The name and its NUL fit new_name_words; calloc pads the rest with NULs. */
            memcpy(&out[i + 3], entry_point, strlen(entry_point) + 1);
            memcpy(&out[i + 3 + new_name_words], &words[i + 3 + old_name_words],
                   (n - 3 - old_name_words) * sizeof *out);
            memcpy(&out[i + new_n], &words[i + n], (count - i - n) * sizeof *out);
            free(words);
            *words_io = out;
            *count_io = new_count;
            return NULL;
        }
        i += n;
    }
    return status_make(CUBEC_INTERNAL, "kernel '%s': no entry point 'main' in shaderc's output",
                       name);
}

/* glsl_compile once its arguments are checked. */
static cubec_status compile_checked(glsl_compiler *compiler, const char *name, const char *source,
                                    const cubec_define *defines, uint32_t define_count,
                                    const char *entry_point, int optimize, glsl_info_form form,
                                    includer *inc, uint32_t **out_words, size_t *out_word_count)
{
    uint32_t *words = NULL;
    size_t count = 0;
    RETURN_IF_ERROR(compile_once(compiler, name, source, defines, define_count, entry_point, 0,
                                 form, inc, &words, &count));
    if (strcmp(entry_point, "main") != 0) {
        cubec_status s = check_entry_function(compiler, name, source, defines, define_count,
                                              entry_point, form, inc);
        if (s) {
            free(words);
            return s;
        }
    }
    if (optimize) {
        uint32_t *opt = NULL;
        size_t opt_count = 0;
        cubec_status s = compile_once(compiler, name, source, defines, define_count, entry_point, 1,
                                      form, inc, &opt, &opt_count);
        if (s) {
            free(words);
            return s;
        }
        if (optimization_kept_resources(words, count, opt, opt_count)) {
            free(words);
            words = opt;
            count = opt_count;
        } else {
            free(opt);
        }
    }
    if (strcmp(entry_point, "main") != 0) {
        cubec_status s = rename_entry_point(name, entry_point, &words, &count);
        if (s) {
            free(words);
            return s;
        }
    }
    *out_words = words;
    *out_word_count = count;
    return NULL;
}

cubec_status glsl_compile(glsl_compiler *compiler, const char *name, const char *source,
                          const cubec_define *defines, uint32_t define_count,
                          const char *entry_point, int optimize, glsl_info_form form,
                          uint32_t **out_words, size_t *out_word_count)
{
    return glsl_compile_with(compiler, name, source, NULL, defines, define_count, entry_point,
                             optimize, form, out_words, out_word_count);
}

cubec_status glsl_compile_with(glsl_compiler *compiler, const char *name, const char *source,
                               const glsl_source_options *more, const cubec_define *defines,
                               uint32_t define_count, const char *entry_point, int optimize,
                               glsl_info_form form, uint32_t **out_words, size_t *out_word_count)
{
    if (out_words) *out_words = NULL;
    if (out_word_count) *out_word_count = 0;
    if (!compiler) return INVALID_ARG("glsl_compile: compiler is NULL");
    if (!source) return INVALID_ARG("glsl_compile: source is NULL");
    if (!out_words) return INVALID_ARG("glsl_compile: out_words is NULL");
    if (!out_word_count) return INVALID_ARG("glsl_compile: out_word_count is NULL");
    if (!name || !name[0]) name = "kernel";
    if (!entry_point || !entry_point[0]) entry_point = "main";
    size_t ident_len = 0;
    if (!define_name_ok(entry_point, &ident_len) || entry_point[ident_len] != '\0')
        return INVALID_ARG("glsl_compile: entry_point '%s' is not a GLSL function name",
                           entry_point);
    for (size_t r = 0; r < sizeof reserved_names / sizeof reserved_names[0]; r++)
        if (strcmp(entry_point, reserved_names[r]) == 0)
            return INVALID_ARG("glsl_compile: entry_point '%s' is reserved: cubec defines it",
                               entry_point);
    RETURN_IF_ERROR(check_defines(defines, define_count, entry_point));
    includer inc = {.sources = more ? more->includes : NULL,
                    .file_name =
                        more && more->file_name && more->file_name[0] ? more->file_name : name};
    RETURN_IF_ERROR(check_version(name, inc.file_name, source));

    const char *preamble = more && more->preamble && more->preamble[0] ? more->preamble : NULL;
    char *headed = NULL;
    if (form == GLSL_INFO_UNIFORM || preamble) {
        headed = with_head(source, form == GLSL_INFO_UNIFORM, preamble, inc.file_name);
        if (!headed)
            return status_make(CUBEC_OUT_OF_MEMORY, "kernel '%s': host out of memory (source)",
                               name);
        source = headed;
    }
    cubec_status s = compile_checked(compiler, name, source, defines, define_count, entry_point,
                                     optimize, form, &inc, out_words, out_word_count);
    free(inc.stop_message);
    free(headed);
    return s;
}
