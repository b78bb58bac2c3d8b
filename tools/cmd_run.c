/* `cubec run`: one kernel, one launch, from the command line.
 *
 * It is the quickest way to try a kernel without writing a host program: buffers are described by
 * flags (the contents of a raw or .npy file, a constant, a ramp, seeded random values, zeros) of
 * typed elements (dtype.h), the metadata by a list of scalars, and what the kernel writes is
 * printed in its binding's type and optionally saved to raw or .npy files. Which bindings count as
 * outputs is not guessed: the library reflects each binding's access from the SPIR-V, and every
 * binding with write access is read back.
 *
 * The whole command line is checked before the device is opened, so a typo costs nothing and is
 * answered with exit code 2 and a message naming the flag and the value. */
#include "cli.h"
#include "dtype.h"
#include "npy.h"

#include "base/file.h"

#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <time.h>
#include <unistd.h>

#define CMD "run"
#define SPIRV_MAGIC 0x07230203u
/* A kernel file larger than this is refused unread: GLSL and SPIR-V of real kernels are far
 * smaller. Buffer files are bounded by their size when opened. */
#define KERNEL_MAX_BYTES ((size_t)64 << 20)

void cli_run_usage(FILE *out)
{
    fprintf(
        out,
        "usage: cubec run KERNEL.comp|KERNEL.spv|KERNEL.wgsl --groups X[,Y,Z] --buf SPEC... "
        "[options]\n"
        "\n"
        "Compiles KERNEL (GLSL unless the name ends in .spv, read as SPIR-V, or .wgsl, read as\n"
        "WGSL: the webgpu backend only, CUBEC_BACKEND=webgpu), creates\n"
        "one storage buffer per --buf (bindings 0, 1, ... in order), launches it once, waits,\n"
        "and prints the first values of every binding the kernel writes.\n"
        "\n"
        "options:\n"
        "  --groups X[,Y,Z]        workgroup counts (Y and Z default to 1)\n"
        "  --buf SPEC              one storage binding, repeated in binding order:\n"
        "      file:PATH             the contents of a regular file (FIFOs, devices such as\n"
        "                            /dev/zero and directories are refused); a PATH ending\n"
        "                            in .npy is a numpy array: its elements, with its dtype\n"
        "                            and shape\n"
        "      fill:SIZE:TYPE:VALUE  SIZE bytes of a repeated VALUE\n"
        "      iota:COUNT:TYPE       COUNT elements 0, 1, 2, ...\n"
        "      rand:COUNT:TYPE[:SEED] COUNT seeded random elements (SEED 0 if left out):\n"
        "                            floats in [0, 1), integers over the type's whole\n"
        "                            range; the same SEED gives the same values (docs/cli.md)\n"
        "      zero:SIZE[:TYPE]      SIZE bytes of zeros\n"
        "    TYPE is f16, f32, f64, i8, u8, i16, u16, i32, u32, i64 or u64 (numpy's float16\n"
        "    ... uint64); SIZE is in bytes, with an optional K, M or G suffix (powers of 1024)\n"
        "  --define NAME[=VALUE]   a preprocessor definition for GLSL (repeatable)\n"
        "  -I DIR                  where GLSL's #include looks, after the including file's\n"
        "                          own directory (repeatable, searched in order)\n"
        "  --preamble TEXT         GLSL inserted after #version (e.g. #extension lines)\n"
        "  --spec ID=VALUE         a specialization constant (repeatable); the value's type:\n"
        "                          64 or 64u uint, -3 or 3i int, 1.5 or 2f float, true/false\n"
        "  --info-u32 V            append a uint32 to the metadata (CUBEC_INFO) bytes\n"
        "  --info-i32 V            append an int32\n"
        "  --info-f32 V            append a float32; the --info-* flags are taken in order\n"
        "  --entry NAME            the entry point (default main)\n"
        "  --optimize, -O          compile GLSL with optimization\n"
        "  --device INDEX|NAME     the device to use: its index or a part of its name, as\n"
        "                          `cubec info` lists them (default: CUBEC_DEVICE, else the best)\n"
        "  --no-robust             run without bounds checks: by default a load or store past\n"
        "                          the end of a --buf reads zero or is dropped where the\n"
        "                          device has robust buffer access (docs/reliability.md);\n"
        "                          on webgpu WebGPU checks every access, --no-robust or not\n"
        "  --print N               how many values to print per output binding (default 8)\n"
        "  --print-u32             print untyped bindings (zero:SIZE, a raw file:) as u32\n"
        "                          instead of f32; typed ones print in their TYPE\n"
        "  --out-dir DIR           save each output binding to DIR/binding<i>.bin (replaced if\n"
        "                          a regular file is there; anything else is refused)\n"
        "  --npy                   with --out-dir: save DIR/binding<i>.npy instead, a numpy\n"
        "                          array of the binding's type (untyped: as printed) and the\n"
        "                          shape of its .npy input (else one dimension)\n"
        "  --trace FILE            write a Chrome trace of the run to FILE (sets CUBEC_TRACE;\n"
        "                          open it in ui.perfetto.dev or chrome://tracing)\n"
        "  --help, -h              this text\n"
        "\n"
        "Flags take their value as the next argument or after '=' (--groups=4).\n"
        "KERNEL is a regular file of at most 64 MiB.\n"
        "Example:\n"
        "  cubec run add.comp --groups 4 --info-u32 256 --buf iota:256:f32 --buf zero:1K\n"
        "  cubec run add.comp --groups 4 --info-u32 256 --buf file:x.npy --buf zero:1K:f32 \\\n"
        "      --out-dir out --npy\n"
        "Exit codes: 0 success, 1 runtime error, 2 usage error.\n");
}

/* ---------------------------------------------------------------------------------------------
 * The command line, parsed
 * ------------------------------------------------------------------------------------------- */

typedef enum buf_kind {
    BUF_FILE, /* raw bytes, or a .npy file (its name ends in .npy) */
    BUF_FILL,
    BUF_IOTA,
    BUF_RAND,
    BUF_ZERO,
} buf_kind;

typedef struct buf_spec {
    const char *text; /* the --buf value as given, for messages */
    buf_kind kind;
    const char *path; /* BUF_FILE */
    int npy;          /* BUF_FILE: a .npy file (type and shape from its header) */
    dtype type;       /* the element type (DTYPE_NONE: untyped bytes) */
    uint64_t size;    /* bytes (BUF_FILL, BUF_ZERO; BUF_IOTA and BUF_RAND: count * type size) */
    uint64_t count;   /* elements (BUF_IOTA, BUF_RAND) */
    uint64_t seed;    /* BUF_RAND */
    unsigned char value[8]; /* BUF_FILL: one element, repeated */
    /* A .npy input's shape (ndim 0: not one), which --npy writes back. */
    uint32_t ndim;
    uint64_t shape[NPY_MAX_DIMS];
} buf_spec;

typedef struct run_args {
    const char *kernel_path;
    uint32_t groups[3];
    int have_groups;
    cubec_define *defines;
    uint32_t define_count;
    const char **include_dirs; /* -I, in order */
    uint32_t include_dir_count;
    const char *preamble;
    cubec_spec_constant *specs; /* --spec */
    uint32_t spec_count;
    uint32_t *info_words; /* every --info-* value is 4 bytes */
    uint32_t info_count;
    buf_spec *bufs;
    uint32_t buf_count;
    const char *out_dir;
    const char *trace_path; /* --trace: CUBEC_TRACE for the device */
    uint32_t print_count;
    int print_u32;
    int save_npy; /* --npy: --out-dir files are .npy, not raw */
    const char *entry_point;
    int optimize;
    int no_robust; /* --no-robust: the device without its bounds-checked mode */
    int have_device;
    uint32_t device_index;
    const char *device_name; /* --device NAME: a part of the device's name */
} run_args;

/* ---------------------------------------------------------------------------------------------
 * Value parsers: each returns 0 on success and leaves *out alone otherwise.
 * ------------------------------------------------------------------------------------------- */

static int ends_with(const char *text, const char *suffix)
{
    const size_t n = strlen(text), m = strlen(suffix);
    return n >= m && strcmp(text + n - m, suffix) == 0;
}

/* A uint32 in decimal or 0x hex, all of `text`, no sign. */
static int parse_u32(const char *text, uint32_t *out)
{
    if (text[0] == '\0' || text[0] == '-' || text[0] == '+' || text[0] == ' ') return -1;
    char *end = NULL;
    errno = 0;
    const unsigned long long v = strtoull(text, &end, 0);
    if (errno != 0 || *end != '\0' || v > UINT32_MAX) return -1;
    *out = (uint32_t)v;
    return 0;
}

static int parse_i32(const char *text, int32_t *out)
{
    if (text[0] == '\0' || text[0] == ' ') return -1;
    char *end = NULL;
    errno = 0;
    const long long v = strtoll(text, &end, 0);
    if (errno != 0 || *end != '\0' || v < INT32_MIN || v > INT32_MAX) return -1;
    *out = (int32_t)v;
    return 0;
}

static int parse_f32(const char *text, float *out)
{
    if (text[0] == '\0' || text[0] == ' ') return -1;
    char *end = NULL;
    errno = 0;
    const float v = strtof(text, &end);
    if (*end != '\0' || (errno == ERANGE && isinf(v))) return -1;
    *out = v;
    return 0;
}

/* A byte count: digits with an optional K, M or G suffix (binary multiples). */
static int parse_size(const char *text, uint64_t *out)
{
    if (text[0] < '0' || text[0] > '9') return -1;
    char *end = NULL;
    errno = 0;
    const unsigned long long v = strtoull(text, &end, 10);
    if (errno != 0) return -1;
    uint64_t multiplier = 1;
    if (*end != '\0') {
        switch (*end) {
        case 'k':
        case 'K': multiplier = 1ull << 10; break;
        case 'm':
        case 'M': multiplier = 1ull << 20; break;
        case 'g':
        case 'G': multiplier = 1ull << 30; break;
        default: return -1;
        }
        if (end[1] != '\0') return -1;
    }
    if (v > UINT64_MAX / multiplier) return -1;
    *out = (uint64_t)v * multiplier;
    return 0;
}

/* A --spec value: the 32 bits of a uint ("64", "0x40", "64u"), an int ("-3", "3i"), a float
 * ("1.5", "2f", "1e-3") or a bool ("true", "false"), as a specialization constant of that type
 * takes them. */
static int parse_spec_value(const char *text, uint32_t *out)
{
    if (strcmp(text, "true") == 0 || strcmp(text, "false") == 0) {
        *out = text[0] == 't';
        return 0;
    }
    const size_t len = strlen(text);
    if (len == 0 || len >= 64) return -1;
    char body[64];
    memcpy(body, text, len + 1);
    const char last = body[len - 1];
    const int hex = strncmp(body, "0x", 2) == 0 || strncmp(body, "0X", 2) == 0;
    char type = 0;
    if (!hex && (last == 'u' || last == 'i' || last == 'f' || last == 'F' || last == 'U')) {
        type = (char)(last == 'F' ? 'f' : last == 'U' ? 'u' : last);
        body[len - 1] = '\0';
    } else if (!hex && strpbrk(body, ".eE") != NULL) {
        type = 'f';
    } else {
        type = body[0] == '-' ? 'i' : 'u';
    }
    if (type == 'f') {
        float v;
        if (parse_f32(body, &v) != 0) return -1;
        memcpy(out, &v, sizeof v);
        return 0;
    }
    if (type == 'i') {
        int32_t v;
        if (parse_i32(body, &v) != 0) return -1;
        memcpy(out, &v, sizeof v);
        return 0;
    }
    return parse_u32(body, out);
}

/* "X[,Y,Z]": one to three counts, each at least 1. */
static int parse_groups(const char *text, uint32_t out[3])
{
    uint32_t groups[3] = {1, 1, 1};
    const char *p = text;
    for (int i = 0; i < 3; i++) {
        char part[32];
        const char *comma = strchr(p, ',');
        const size_t len = comma ? (size_t)(comma - p) : strlen(p);
        if (len == 0 || len >= sizeof part) return -1;
        memcpy(part, p, len);
        part[len] = '\0';
        if (parse_u32(part, &groups[i]) != 0 || groups[i] == 0) return -1;
        if (comma == NULL) {
            memcpy(out, groups, sizeof groups);
            return 0;
        }
        p = comma + 1;
    }
    return -1; /* a fourth component */
}

/* Splits "kind:a:b:c" in place into at most `max` fields; returns the number of fields. For
 * "file:" only the first colon splits, so that paths may contain colons. */
static int split_spec(char *text, char **fields, int max)
{
    int n = 0;
    char *p = text;
    fields[n++] = p;
    const int is_file = strncmp(text, "file:", 5) == 0;
    while (n < max && (p = strchr(p, ':')) != NULL) {
        *p++ = '\0';
        fields[n++] = p;
        if (is_file) break;
    }
    return n;
}

/* An element type field of a --buf spec; writes the message into `err` when it is not one. */
static int parse_type(const char *text, dtype *out, char *err, size_t err_size)
{
    *out = dtype_parse(text);
    if (*out != DTYPE_NONE) return 0;
    snprintf(err, err_size, "unknown type '%s' (%s)", text, dtype_list());
    return -1;
}

/* COUNT of an iota: or rand: spec, of `type`: elements, at least one, whose bytes fit 64 bits. */
static int parse_count(const char *text, dtype type, buf_spec *spec, char *err, size_t err_size)
{
    if (parse_size(text, &spec->count) != 0 || spec->count == 0 ||
        spec->count > UINT64_MAX / dtype_size(type)) {
        snprintf(err, err_size, "COUNT '%s' is not a positive number of elements", text);
        return -1;
    }
    spec->size = spec->count * dtype_size(type);
    return 0;
}

/* Parses one --buf value. On error, writes a message (without the flag) into `err`. */
static int parse_buf(const char *text, buf_spec *out, char *err, size_t err_size)
{
    char copy[512];
    if (strlen(text) >= sizeof copy) {
        snprintf(err, err_size, "the spec is too long");
        return -1;
    }
    strcpy(copy, text);
    char *f[5] = {NULL};
    const int n = split_spec(copy, f, 5);
    buf_spec spec = {.text = text};

    if (strcmp(f[0], "file") == 0) {
        if (n != 2 || f[1][0] == '\0') {
            snprintf(err, err_size, "expected file:PATH");
            return -1;
        }
        spec.kind = BUF_FILE;
        spec.path = text + 5; /* points into argv, which outlives the parse */
        spec.npy = ends_with(spec.path, ".npy");
    } else if (strcmp(f[0], "fill") == 0) {
        if (n != 4) {
            snprintf(err, err_size, "expected fill:SIZE:TYPE:VALUE");
            return -1;
        }
        if (parse_type(f[2], &spec.type, err, err_size) != 0) return -1;
        const size_t es = dtype_size(spec.type);
        if (parse_size(f[1], &spec.size) != 0 || spec.size == 0 || spec.size % es != 0) {
            snprintf(err, err_size, "SIZE '%s' is not a positive multiple of %zu bytes (%s)", f[1],
                     es, f[2]);
            return -1;
        }
        spec.kind = BUF_FILL;
        if (dtype_parse_value(spec.type, f[3], spec.value) != 0) {
            snprintf(err, err_size, "VALUE '%s' is not a valid %s", f[3], f[2]);
            return -1;
        }
    } else if (strcmp(f[0], "iota") == 0 || strcmp(f[0], "rand") == 0) {
        const int rand = f[0][0] == 'r';
        if (rand ? n != 3 && n != 4 : n != 3) {
            snprintf(err, err_size,
                     rand ? "expected rand:COUNT:TYPE[:SEED]" : "expected iota:COUNT:TYPE");
            return -1;
        }
        if (parse_type(f[2], &spec.type, err, err_size) != 0) return -1;
        if (parse_count(f[1], spec.type, &spec, err, err_size) != 0) return -1;
        spec.kind = rand ? BUF_RAND : BUF_IOTA;
        if (n == 4) {
            char *end = NULL;
            errno = 0;
            spec.seed = strtoull(f[3], &end, 0);
            if (f[3][0] < '0' || f[3][0] > '9' || errno != 0 || *end != '\0') {
                snprintf(err, err_size, "SEED '%s' is not a number in 0..2^64-1", f[3]);
                return -1;
            }
        }
    } else if (strcmp(f[0], "zero") == 0) {
        if (n != 2 && n != 3) {
            snprintf(err, err_size, "expected zero:SIZE or zero:SIZE:TYPE");
            return -1;
        }
        if (n == 3 && parse_type(f[2], &spec.type, err, err_size) != 0) return -1;
        const size_t es = dtype_size(spec.type);
        if (parse_size(f[1], &spec.size) != 0 || spec.size == 0 || spec.size % es != 0) {
            snprintf(err, err_size, "SIZE '%s' is not a positive byte count%s", f[1],
                     es > 1 ? " that is a multiple of the type's size" : "");
            return -1;
        }
        spec.kind = BUF_ZERO;
    } else {
        snprintf(err, err_size, "unknown kind '%s' (file, fill, iota, rand or zero)", f[0]);
        return -1;
    }
    *out = spec;
    return 0;
}

/* Parses argv into `a`. Returns CLI_EXIT_OK, or CLI_EXIT_USAGE after printing why; sets *help
 * when --help was asked for. The arrays are sized by argc: every flag uses one argument at least.
 */
static int parse_args(int argc, char **argv, run_args *a, int *help)
{
    for (int i = 1; i < argc; i++) {
        const char *arg = argv[i];
        if (strcmp(arg, "--help") == 0 || strcmp(arg, "-h") == 0) {
            *help = 1;
            return CLI_EXIT_OK;
        }
        if (arg[0] != '-' || arg[1] == '\0') {
            if (a->kernel_path != NULL) {
                return cli_usage_error(CMD, "unexpected argument '%s' (the kernel is already '%s')",
                                       arg, a->kernel_path);
            }
            a->kernel_path = arg;
            continue;
        }

        /* -I DIR or -IDIR, as C compilers take it. */
        if (strncmp(arg, "-I", 2) == 0) {
            const char *dir = arg[2] ? arg + 2 : (i + 1 < argc ? argv[++i] : NULL);
            if (dir == NULL) return cli_usage_error(CMD, "-I needs a directory");
            if (dir[0] == '\0') return cli_usage_error(CMD, "-I: the directory is empty");
            a->include_dirs[a->include_dir_count++] = dir;
            continue;
        }

        /* The flag's name, and its value from "--flag=value" or the next argument. */
        char name[64];
        const char *eq = strchr(arg, '=');
        const size_t name_len = eq ? (size_t)(eq - arg) : strlen(arg);
        if (name_len >= sizeof name) return cli_usage_error(CMD, "unknown flag '%s'", arg);
        memcpy(name, arg, name_len);
        name[name_len] = '\0';

        /* Flags without a value first. */
        if (strcmp(name, "--print-u32") == 0 || strcmp(name, "--optimize") == 0 ||
            strcmp(name, "-O") == 0 || strcmp(name, "--npy") == 0 ||
            strcmp(name, "--no-robust") == 0) {
            if (eq != NULL) return cli_usage_error(CMD, "%s takes no value (got '%s')", name, arg);
            if (strcmp(name, "--print-u32") == 0) {
                a->print_u32 = 1;
            } else if (strcmp(name, "--npy") == 0) {
                a->save_npy = 1;
            } else if (strcmp(name, "--no-robust") == 0) {
                a->no_robust = 1;
            } else {
                a->optimize = 1;
            }
            continue;
        }

        static const char *const valued[] = {"--groups",   "--define", "--info-u32", "--info-i32",
                                             "--info-f32", "--buf",    "--out-dir",  "--print",
                                             "--entry",    "--device", "--trace",    "--spec",
                                             "--preamble"};
        int known = 0;
        for (size_t k = 0; k < sizeof valued / sizeof valued[0]; k++)
            known |= !strcmp(name, valued[k]);
        if (!known) return cli_usage_error(CMD, "unknown flag '%s'", name);
        const char *value;
        if (eq != NULL) {
            value = eq + 1;
        } else if (i + 1 < argc) {
            value = argv[++i];
        } else {
            return cli_usage_error(CMD, "%s needs a value", name);
        }

        if (strcmp(name, "--groups") == 0) {
            if (parse_groups(value, a->groups) != 0) {
                return cli_usage_error(CMD, "--groups '%s': expected X[,Y,Z], each a count >= 1",
                                       value);
            }
            a->have_groups = 1;
        } else if (strcmp(name, "--define") == 0) {
            /* NAME or NAME=VALUE; the name is copied out so the value may follow it in argv. */
            const char *v_eq = strchr(value, '=');
            const size_t len = v_eq ? (size_t)(v_eq - value) : strlen(value);
            if (len == 0) return cli_usage_error(CMD, "--define '%s': the name is empty", value);
            char *def_name = malloc(len + 1);
            if (def_name == NULL) return cli_usage_error(CMD, "out of host memory");
            memcpy(def_name, value, len);
            def_name[len] = '\0';
            a->defines[a->define_count].name = def_name;
            a->defines[a->define_count].value = v_eq ? v_eq + 1 : NULL;
            a->define_count++;
        } else if (strcmp(name, "--spec") == 0) {
            const char *v_eq = strchr(value, '=');
            char id_text[16];
            const size_t len = v_eq ? (size_t)(v_eq - value) : 0;
            uint32_t id = 0, bits = 0;
            if (v_eq == NULL || len == 0 || len >= sizeof id_text)
                return cli_usage_error(CMD, "--spec '%s': expected ID=VALUE (e.g. 0=64, 1=1.5f)",
                                       value);
            memcpy(id_text, value, len);
            id_text[len] = '\0';
            if (parse_u32(id_text, &id) != 0)
                return cli_usage_error(CMD, "--spec '%s': the id '%s' is not a uint32", value,
                                       id_text);
            if (parse_spec_value(v_eq + 1, &bits) != 0)
                return cli_usage_error(CMD,
                                       "--spec '%s': the value '%s' is not a uint (64, 64u), "
                                       "int (-3, 3i), float (1.5, 2f) or bool (true, false)",
                                       value, v_eq + 1);
            for (uint32_t k = 0; k < a->spec_count; k++)
                if (a->specs[k].id == id)
                    return cli_usage_error(CMD, "--spec '%s': id %" PRIu32 " is given twice", value,
                                           id);
            a->specs[a->spec_count++] = (cubec_spec_constant){id, bits};
        } else if (strcmp(name, "--preamble") == 0) {
            a->preamble = value;
        } else if (strcmp(name, "--info-u32") == 0) {
            uint32_t v;
            if (parse_u32(value, &v) != 0)
                return cli_usage_error(CMD, "--info-u32 '%s': not a uint32", value);
            a->info_words[a->info_count++] = v;
        } else if (strcmp(name, "--info-i32") == 0) {
            int32_t v;
            if (parse_i32(value, &v) != 0)
                return cli_usage_error(CMD, "--info-i32 '%s': not an int32", value);
            memcpy(&a->info_words[a->info_count++], &v, 4);
        } else if (strcmp(name, "--info-f32") == 0) {
            float v;
            if (parse_f32(value, &v) != 0)
                return cli_usage_error(CMD, "--info-f32 '%s': not a float", value);
            memcpy(&a->info_words[a->info_count++], &v, 4);
        } else if (strcmp(name, "--buf") == 0) {
            char err[256];
            if (parse_buf(value, &a->bufs[a->buf_count], err, sizeof err) != 0)
                return cli_usage_error(CMD, "--buf '%s': %s", value, err);
            a->buf_count++;
        } else if (strcmp(name, "--out-dir") == 0) {
            if (value[0] == '\0') return cli_usage_error(CMD, "--out-dir: the path is empty");
            a->out_dir = value;
        } else if (strcmp(name, "--trace") == 0) {
            if (value[0] == '\0') return cli_usage_error(CMD, "--trace: the path is empty");
            a->trace_path = value;
        } else if (strcmp(name, "--print") == 0) {
            if (parse_u32(value, &a->print_count) != 0)
                return cli_usage_error(CMD, "--print '%s': not a count", value);
        } else if (strcmp(name, "--entry") == 0) {
            if (value[0] == '\0') return cli_usage_error(CMD, "--entry: the name is empty");
            a->entry_point = value;
        } else if (strcmp(name, "--device") == 0) {
            /* As CUBEC_DEVICE reads it: all digits is an index (and must fit), anything else a
             * part of a device name. */
            if (value[0] == '\0') return cli_usage_error(CMD, "--device: the value is empty");
            if (strspn(value, "0123456789") == strlen(value)) {
                if (parse_u32(value, &a->device_index) != 0)
                    return cli_usage_error(CMD, "--device '%s': not a device index in 0..%u", value,
                                           UINT32_MAX);
                a->have_device = 1;
            } else {
                a->device_name = value;
            }
        }
    }

    if (a->kernel_path == NULL) return cli_usage_error(CMD, "no kernel file given");
    if (!a->have_groups) return cli_usage_error(CMD, "--groups is required");
    if (a->buf_count == 0) return cli_usage_error(CMD, "at least one --buf is required");
    if (a->save_npy && a->out_dir == NULL) return cli_usage_error(CMD, "--npy needs --out-dir");
    if (a->buf_count > 32) {
        return cli_usage_error(CMD, "%" PRIu32 " --buf given; a kernel has at most 32 bindings",
                               a->buf_count);
    }
    return CLI_EXIT_OK;
}

/* ---------------------------------------------------------------------------------------------
 * Files
 * ------------------------------------------------------------------------------------------- */

/* Reads a whole regular file (base/file.h: a FIFO or a device is refused without blocking, and
 * nothing past the file's size or `limit` is read) into a malloc'ed buffer with a NUL after the
 * end (for GLSL). Prints the reason, naming `what` (the flag and its value), and returns -1 on
 * failure. */
static int read_file(const char *path, size_t limit, const char *what, char **out_data,
                     size_t *out_size)
{
    cubec_status status = file_read_regular(path, limit, out_data, out_size);
    if (status == NULL) return 0;
    fprintf(stderr, "cubec run: %s: %s\n", what, cubec_status_message(status));
    cubec_status_free(status);
    return -1;
}

/* Writes `data` to `path`, a regular file (created or replaced; a FIFO or device is refused):
 * raw, or with `npy` as a .npy file of `type` and `shape` (ndim 0: one dimension). */
static int write_output(const char *path, int npy, dtype type, const uint64_t *shape, uint32_t ndim,
                        const void *data, size_t size)
{
    FILE *f = NULL;
    cubec_status status = file_open_output(path, FILE_OUTPUT_TRUNCATE, 0, &f);
    if (status != NULL) {
        fprintf(stderr, "cubec run: --out-dir: %s\n", cubec_status_message(status));
        cubec_status_free(status);
        return -1;
    }
    const int write_failed =
        npy ? npy_write(f, type, shape, ndim, data, size) != 0 : fwrite(data, 1, size, f) != size;
    const int close_failed = fclose(f) != 0;
    if (write_failed || close_failed) {
        fprintf(stderr, "cubec run: cannot write '%s': %s\n", path, strerror(errno));
        return -1;
    }
    return 0;
}

/* The output directory is created if missing (one level, like mkdir without -p). */
static int ensure_dir(const char *path)
{
    if (mkdir(path, 0777) == 0 || errno == EEXIST) {
        struct stat st;
        if (stat(path, &st) == 0 && S_ISDIR(st.st_mode)) return 0;
        fprintf(stderr, "cubec run: --out-dir '%s' is not a directory\n", path);
        return -1;
    }
    fprintf(stderr, "cubec run: cannot create --out-dir '%s': %s\n", path, strerror(errno));
    return -1;
}

static double now_seconds(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

/* ---------------------------------------------------------------------------------------------
 * Running
 * ------------------------------------------------------------------------------------------- */

/* Creates the buffer of one --buf spec; a file's bytes were read already (`file_data`,
 * `file_size`: for a .npy file, its elements). Returns CLI_EXIT_OK or the exit code after
 * reporting. */
static int create_buffer(cubec_device *device, const buf_spec *spec, uint32_t binding,
                         const char *file_data, size_t file_size, cubec_buffer *out)
{
    char what[600];
    snprintf(what, sizeof what, "creating binding %" PRIu32 " from --buf '%s'", binding,
             spec->text);
    cubec_status status = NULL;
    const size_t es = dtype_size(spec->type);
    /* A fill of an element of at most 4 bytes is a device fill of its repeated 32-bit word; the
     * others (8-byte elements) are made on the host like iota and rand. */
    const int device_fill = spec->kind == BUF_ZERO || (spec->kind == BUF_FILL && es <= 4);
    if (spec->kind == BUF_FILE) {
        status = cubec_buffer_from(device, CUBEC_STREAM_CURRENT, file_data, file_size, out);
    } else if (!device_fill) {
        if (spec->size > SIZE_MAX) return cli_usage_error(CMD, "--buf '%s': too big", spec->text);
        unsigned char *bytes = malloc((size_t)spec->size);
        if (bytes == NULL) {
            fprintf(stderr, "cubec run: --buf '%s': out of host memory\n", spec->text);
            return CLI_EXIT_RUNTIME;
        }
        const uint64_t count = spec->size / es;
        for (uint64_t i = 0; i < count; i++) {
            unsigned char *at = bytes + i * es;
            if (spec->kind == BUF_IOTA)
                dtype_iota(spec->type, i, at);
            else if (spec->kind == BUF_RAND)
                dtype_random(spec->type, spec->seed, i, at);
            else
                memcpy(at, spec->value, es);
        }
        status = cubec_buffer_from(device, CUBEC_STREAM_CURRENT, bytes, spec->size, out);
        free(bytes);
    } else {
        /* Allocated, then filled on the device: no host copy of a big constant buffer. The tail
         * that is not a whole 32-bit word (cubec_fill's unit) is written from the host. */
        status = cubec_buffer_create(device, CUBEC_STREAM_CURRENT, spec->size, out);
        unsigned char word[4] = {0};
        if (spec->kind == BUF_FILL)
            for (size_t i = 0; i < 4; i++)
                word[i] = spec->value[i % es];
        uint32_t pattern;
        memcpy(&pattern, word, 4);
        const uint64_t words_bytes = spec->size & ~(uint64_t)3;
        if (status == NULL && words_bytes != 0)
            status = cubec_fill(device, CUBEC_STREAM_CURRENT, *out, 0, words_bytes, pattern);
        if (status == NULL && words_bytes != spec->size)
            status = cubec_write(device, CUBEC_STREAM_CURRENT, *out, words_bytes, word,
                                 spec->size - words_bytes);
    }
    return cli_failed(CMD, status, what) ? CLI_EXIT_RUNTIME : CLI_EXIT_OK;
}

static const char *access_name(cubec_access access)
{
    switch (access) {
    case CUBEC_ACCESS_READ: return "read";
    case CUBEC_ACCESS_WRITE: return "write";
    case CUBEC_ACCESS_READ_WRITE: return "read-write";
    }
    return "?";
}

/* Reads back one written binding, prints its first values and saves it if asked. */
static int report_output(cubec_device *device, const run_args *a, uint32_t binding,
                         cubec_access access, cubec_buffer buffer)
{
    uint64_t size = 0;
    if (cli_failed(CMD, cubec_buffer_get_size(device, buffer, &size), "reading a buffer's size"))
        return CLI_EXIT_RUNTIME;
    if (size > SIZE_MAX) {
        fprintf(stderr, "cubec run: binding %" PRIu32 " is too big for host memory\n", binding);
        return CLI_EXIT_RUNTIME;
    }
    unsigned char *data = malloc(size ? (size_t)size : 1);
    if (data == NULL) {
        fprintf(stderr, "cubec run: out of host memory reading binding %" PRIu32 "\n", binding);
        return CLI_EXIT_RUNTIME;
    }
    char what[64];
    snprintf(what, sizeof what, "reading binding %" PRIu32, binding);
    if (cli_failed(CMD, cubec_read(device, CUBEC_STREAM_CURRENT, buffer, 0, data, size), what)) {
        free(data);
        return CLI_EXIT_RUNTIME;
    }

    /* The binding's element type; untyped bytes show as f32 (u32 with --print-u32). */
    const buf_spec *spec = &a->bufs[binding];
    const dtype type = spec->type != DTYPE_NONE ? spec->type : a->print_u32 ? DTYPE_U32 : DTYPE_F32;
    const size_t es = dtype_size(type);
    const uint64_t values = size / es;
    const uint64_t shown = values < a->print_count ? values : a->print_count;
    printf("binding %" PRIu32 " (%s, %" PRIu64 " bytes, %s):", binding, access_name(access), size,
           dtype_name(type));
    for (uint64_t i = 0; i < shown; i++) {
        putchar(' ');
        dtype_print(stdout, type, data + i * es);
    }
    printf("%s\n", shown < values ? " ..." : "");

    int exit_code = CLI_EXIT_OK;
    if (a->out_dir != NULL) {
        char path[4096];
        snprintf(path, sizeof path, "%s/binding%" PRIu32 ".%s", a->out_dir, binding,
                 a->save_npy ? "npy" : "bin");
        /* A .npy input keeps its shape; anything else is one dimension of whole elements (a
         * tail shorter than an element is not saved in a .npy file). */
        const int same_shape = spec->ndim > 0 && spec->kind == BUF_FILE;
        if (a->save_npy && size % es != 0)
            fprintf(stderr,
                    "cubec run: binding %" PRIu32 ": the last %" PRIu64 " bytes are not a "
                    "whole %s and are left out of the .npy file\n",
                    binding, size % es, dtype_name(type));
        if (write_output(path, a->save_npy, type, same_shape ? spec->shape : NULL,
                         same_shape ? spec->ndim : 0, data,
                         a->save_npy ? values * es : size) != 0) {
            exit_code = CLI_EXIT_RUNTIME;
        } else {
            printf("  saved to %s\n", path);
        }
    }
    free(data);
    return exit_code;
}

static int run(const run_args *a)
{
    int exit_code = CLI_EXIT_RUNTIME;
    cubec_device *device = NULL;
    cubec_kernel kernel = {0};
    cubec_buffer buffers[32] = {{0}};
    char *file_data[32] = {NULL}; /* --buf file: contents, by binding */
    size_t file_size[32] = {0};
    char *source = NULL;
    size_t source_size = 0;

    /* The kernel: SPIR-V or WGSL by extension, GLSL otherwise. */
    const int is_spirv = ends_with(a->kernel_path, ".spv");
    const int is_wgsl = ends_with(a->kernel_path, ".wgsl");
    char kernel_what[600];
    snprintf(kernel_what, sizeof kernel_what, "kernel '%s'", a->kernel_path);
    if (read_file(a->kernel_path, KERNEL_MAX_BYTES, kernel_what, &source, &source_size) != 0)
        goto done;
    if (is_spirv) {
        uint32_t magic = 0;
        if (source_size >= 4) memcpy(&magic, source, 4);
        if (source_size % 4 != 0 || source_size == 0 || magic != SPIRV_MAGIC) {
            fprintf(stderr,
                    "cubec run: kernel '%s' is not SPIR-V (%zu bytes, first word 0x%08" PRIx32
                    "; SPIR-V starts with 0x%08x and is a whole number of 32-bit words)\n",
                    a->kernel_path, source_size, magic, SPIRV_MAGIC);
            goto done;
        }
    }
    /* Buffer files are read before the device opens: a file that cannot be used costs nothing. */
    for (uint32_t i = 0; i < a->buf_count; i++) {
        if (a->bufs[i].kind != BUF_FILE) continue;
        char what[600];
        snprintf(what, sizeof what, "--buf '%s'", a->bufs[i].text);
        if (read_file(a->bufs[i].path, SIZE_MAX, what, &file_data[i], &file_size[i]) != 0)
            goto done;
        if (a->bufs[i].npy) {
            /* The elements after the header are the buffer; the type and shape are the
             * binding's, for printing and --npy. */
            npy_array arr;
            char err[256];
            if (npy_parse((const unsigned char *)file_data[i], file_size[i], &arr, err,
                          sizeof err) != 0) {
                fprintf(stderr, "cubec run: --buf '%s': %s\n", a->bufs[i].text, err);
                goto done;
            }
            if (arr.data_size == 0) {
                exit_code =
                    cli_usage_error(CMD, "--buf '%s': the array has no elements", a->bufs[i].text);
                goto done;
            }
            buf_spec *spec = &a->bufs[i];
            spec->type = arr.type;
            spec->ndim = arr.ndim ? arr.ndim : 1;
            memcpy(spec->shape, arr.shape, sizeof spec->shape);
            if (arr.ndim == 0) spec->shape[0] = 1;
            memmove(file_data[i], file_data[i] + arr.data_offset, (size_t)arr.data_size);
            file_size[i] = (size_t)arr.data_size;
        }
        if (file_size[i] == 0) {
            /* A buffer of 0 bytes cannot be bound to a kernel: say so in terms of the flag. */
            exit_code = cli_usage_error(CMD, "--buf '%s': the file is empty", a->bufs[i].text);
            goto done;
        }
    }
    if (a->out_dir != NULL && ensure_dir(a->out_dir) != 0) goto done;

    /* Bounds-checked by default: `cubec run` cannot know what the kernel's info.n means, so a
     * grid larger than a --buf must not write past it unnoticed. WebGPU checks every access
     * itself, with no mode to ask for: asking would only have the library warn that the device
     * lacks Vulkan's robust buffer access. */
    int backend = 0;
    if (!cli_selected_backend(CMD, &backend)) goto done;
    const int webgpu = cli_backend_is_webgpu(backend);
    cubec_device_desc device_desc = {.struct_size = sizeof(cubec_device_desc),
                                     .robust = !a->no_robust && !webgpu};
    if (a->have_device) {
        device_desc.select_by_index = 1;
        device_desc.index = a->device_index;
    }
    device_desc.name = a->device_name;
    if (cli_failed(CMD, cubec_device_open(&device_desc, &device), "opening the device")) goto done;
    cubec_device_info device_info = CUBEC_DEVICE_INFO_INIT;
    if (cli_failed(CMD, cubec_device_get_info(device, &device_info), "reading the device info"))
        goto done;

    /* Name the kernel after its file, so compiler diagnostics point at it. */
    const char *slash = strrchr(a->kernel_path, '/');
    const char *kernel_name = slash ? slash + 1 : a->kernel_path;
    cubec_kernel_desc desc = {
        .struct_size = sizeof(cubec_kernel_desc),
        .name = kernel_name,
        .defines = a->defines,
        .define_count = a->define_count,
        .entry_point = a->entry_point,
        .optimize = a->optimize,
        .spec_constants = a->specs,
        .spec_constant_count = a->spec_count,
    };
    if (is_spirv) {
        if (a->include_dir_count || a->preamble) {
            exit_code = cli_usage_error(CMD, "%s applies to GLSL; '%s' is SPIR-V",
                                        a->include_dir_count ? "-I" : "--preamble", a->kernel_path);
            goto done;
        }
        /* The bytes were malloc'ed, so they are aligned for uint32_t. */
        desc.spirv = (const uint32_t *)(const void *)source;
        desc.spirv_words = source_size / 4;
    } else if (is_wgsl) {
        if (a->include_dir_count || a->preamble) {
            exit_code = cli_usage_error(CMD, "%s applies to GLSL; '%s' is WGSL",
                                        a->include_dir_count ? "-I" : "--preamble", a->kernel_path);
            goto done;
        }
        desc.wgsl = source;
    } else {
        desc.glsl = source;
        /* #include "x" looks next to the kernel's file first, as compilers do. */
        desc.glsl_path = a->kernel_path;
        desc.include_dirs = a->include_dirs;
        desc.include_dir_count = a->include_dir_count;
        desc.preamble = a->preamble;
    }
    double t0 = now_seconds();
    if (cli_failed(CMD, cubec_kernel_create(device, &desc, &kernel), "creating the kernel"))
        goto done;
    const double compile_s = now_seconds() - t0;

    cubec_kernel_info info = CUBEC_KERNEL_INFO_INIT;
    if (cli_failed(CMD, cubec_kernel_get_info(device, kernel, &info), "reading the kernel info"))
        goto done;

    /* The command line must cover what the kernel declares: fewer buffers is a mistake in the
     * flags. More is not: a project's layout may have more bindings than its module still uses
     * (spirv-opt removes unused ones), and the library takes such a launch (docs/kernels.md,
     * "Bringing existing shaders"); the buffers past the kernel's last binding are not bound. */
    if (a->buf_count < info.binding_count) {
        exit_code = cli_usage_error(
            CMD, "kernel '%s' has %" PRIu32 " storage binding%s but %" PRIu32 " --buf %s given",
            kernel_name, info.binding_count, info.binding_count == 1 ? "" : "s", a->buf_count,
            a->buf_count == 1 ? "was" : "were");
        goto done;
    }
    const uint32_t info_bytes = a->info_count * 4;
    if (info.info_size != info_bytes) {
        exit_code =
            cli_usage_error(CMD,
                            "kernel '%s' takes %" PRIu32 " bytes of info (CUBEC_INFO / push "
                            "constants) but the --info-* flags give %" PRIu32,
                            kernel_name, info.info_size, info_bytes);
        goto done;
    }

    for (uint32_t i = 0; i < a->buf_count; i++) {
        const int rc =
            create_buffer(device, &a->bufs[i], i, file_data[i], file_size[i], &buffers[i]);
        if (rc != CLI_EXIT_OK) {
            exit_code = rc;
            goto done;
        }
    }

    const cubec_launch_desc launch = {
        .struct_size = sizeof(cubec_launch_desc),
        .kernel = kernel,
        .buffers = buffers,
        .buffer_count = a->buf_count,
        .info = info_bytes ? a->info_words : NULL,
        .info_size = info_bytes,
        .groups = {a->groups[0], a->groups[1], a->groups[2]},
    };
    /* The inputs are uploaded first so that the launch time below is the launch's alone. */
    if (cli_failed(CMD, cubec_sync(device, CUBEC_STREAM_CURRENT), "uploading the buffers"))
        goto done;
    t0 = now_seconds();
    if (cli_failed(CMD, cubec_launch(device, CUBEC_STREAM_CURRENT, &launch), "launching"))
        goto done;
    if (cli_failed(CMD, cubec_sync(device, CUBEC_STREAM_CURRENT), "running the kernel")) goto done;
    const double run_s = now_seconds() - t0;

    printf("device:  %s\n", device_info.name);
    /* A line of its own: scripts read the device line whole. */
    printf("bounds:  %s\n",
           webgpu ? (a->no_robust ? "checked by WebGPU, always (--no-robust cannot turn it off)"
                                  : "checked by WebGPU, always (within each buffer's binding)")
           : device_info.robust == CUBEC_ROBUST_BUFFER ? "checked per buffer"
           : device_info.robust                        ? "checked per pool page only"
           : a->no_robust                              ? "not checked (--no-robust)"
                                                       : "not checked (the device has no robust "
                                                         "buffer access)");
    printf("kernel:  %s (%s), %" PRIu32 " binding%s, %" PRIu32 " bytes of info%s, workgroup "
           "%" PRIu32 "x%" PRIu32 "x%" PRIu32 ", compiled in %.3f ms\n",
           kernel_name,
           is_spirv  ? "SPIR-V"
           : is_wgsl ? "WGSL"
                     : "GLSL",
           info.binding_count, info.binding_count == 1 ? "" : "s", info.info_size,
           info.info_size == 0           ? ""
           : info.info_in_push_constants ? (webgpu ? " in immediates" : " in push constants")
                                         : " in a storage buffer",
           info.workgroup_size[0], info.workgroup_size[1], info.workgroup_size[2], compile_s * 1e3);
    printf("launch:  %" PRIu32 "x%" PRIu32 "x%" PRIu32 " groups in %.3f ms (launch + sync, "
           "including pipeline creation)\n",
           a->groups[0], a->groups[1], a->groups[2], run_s * 1e3);

    /* Numbered as the bindings are, from 0 in the order of the --buf flags. */
    if (a->buf_count == info.binding_count + 1)
        printf("unbound: buffer %" PRIu32 " (past the kernel's last binding: passed, not bound)\n",
               info.binding_count);
    else if (a->buf_count > info.binding_count)
        printf("unbound: buffers %" PRIu32 "..%" PRIu32
               " (past the kernel's last binding: passed, not bound)\n",
               info.binding_count, a->buf_count - 1);

    exit_code = CLI_EXIT_OK;
    int outputs = 0;
    for (uint32_t i = 0; i < info.binding_count; i++) {
        if ((info.access[i] & CUBEC_ACCESS_WRITE) == 0) continue;
        outputs++;
        const int rc = report_output(device, a, i, info.access[i], buffers[i]);
        if (rc != CLI_EXIT_OK) {
            exit_code = rc;
            break;
        }
    }
    if (outputs == 0) printf("(the kernel writes none of its bindings)\n");

done:
    if (device != NULL) {
        for (uint32_t i = 0; i < a->buf_count; i++) {
            if (cli_failed(CMD, cubec_buffer_release(device, buffers[i]), "releasing a buffer"))
                exit_code = CLI_EXIT_RUNTIME;
        }
        if (cli_failed(CMD, cubec_kernel_destroy(device, kernel), "destroying the kernel"))
            exit_code = CLI_EXIT_RUNTIME;
        cubec_device_close(device);
    }
    for (uint32_t i = 0; i < a->buf_count; i++)
        free(file_data[i]);
    free(source);
    return exit_code;
}

/* run() with the device tracing into --trace's file: the library writes the trace when the device
 * closes, from CUBEC_TRACE, which must be set before the device opens. */
static int run_traced(const run_args *a)
{
    /* Only a regular file is replaced: a FIFO, a device (`--trace /dev/null`, as root) or a
     * directory at the path is refused, never removed. */
    cubec_status refused = file_check_output(a->trace_path, 0);
    if (refused != NULL) {
        fprintf(stderr, "cubec run: --trace: %s\n", cubec_status_message(refused));
        cubec_status_free(refused);
        return CLI_EXIT_RUNTIME;
    }
    /* A file left by an earlier run must not pass for this run's trace. */
    if (unlink(a->trace_path) != 0 && errno != ENOENT) {
        fprintf(stderr, "cubec run: --trace '%s': cannot replace the file: %s\n", a->trace_path,
                strerror(errno));
        return CLI_EXIT_RUNTIME;
    }
    if (setenv("CUBEC_TRACE", a->trace_path, 1) != 0) {
        fprintf(stderr, "cubec run: --trace '%s': cannot set CUBEC_TRACE: %s\n", a->trace_path,
                strerror(errno));
        return CLI_EXIT_RUNTIME;
    }
    const int exit_code = run(a);
    /* A run that failed has said why already; a trace it may have left is a bonus. */
    if (exit_code != CLI_EXIT_OK) return exit_code;
    struct stat st;
    if (stat(a->trace_path, &st) != 0 || st.st_size == 0) {
        fprintf(stderr, "cubec run: --trace '%s': the trace file was not written\n", a->trace_path);
        return CLI_EXIT_RUNTIME;
    }
    printf("trace:   %s (open it in ui.perfetto.dev or chrome://tracing)\n", a->trace_path);
    return CLI_EXIT_OK;
}

int cli_run_main(int argc, char **argv)
{
    const size_t n = argc > 0 ? (size_t)argc : 1;
    run_args a = {.print_count = 8};
    a.defines = calloc(n, sizeof *a.defines);
    a.info_words = calloc(n, sizeof *a.info_words);
    a.bufs = calloc(n, sizeof *a.bufs);
    a.include_dirs = calloc(n, sizeof *a.include_dirs);
    a.specs = calloc(n, sizeof *a.specs);
    int help = 0;
    int exit_code;
    if (a.defines == NULL || a.info_words == NULL || a.bufs == NULL || a.include_dirs == NULL ||
        a.specs == NULL) {
        fprintf(stderr, "cubec run: out of host memory\n");
        exit_code = CLI_EXIT_RUNTIME;
    } else {
        exit_code = parse_args(argc, argv, &a, &help);
        if (exit_code == CLI_EXIT_OK) {
            if (help) {
                cli_run_usage(stdout);
            } else if (a.trace_path != NULL) {
                exit_code = run_traced(&a);
            } else {
                exit_code = run(&a);
            }
        }
    }
    if (a.defines != NULL) {
        for (uint32_t i = 0; i < a.define_count; i++)
            free((char *)a.defines[i].name);
    }
    free(a.defines);
    free(a.include_dirs);
    free(a.specs);
    free(a.info_words);
    free(a.bufs);
    return exit_code;
}
