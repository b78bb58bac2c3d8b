/* corpus_create: hands each SPIR-V module named on the command line to cubec_kernel_create, as a
 * user bringing an existing shader library would (default specialization constants, entry point
 * "main"), and prints one line per module: `ACCEPTED\t<name>` or
 * `REFUSED\t<name>\t<code>\t<message>`. The corpus driver (ggml_corpus.py) classifies the
 * refusals; this program only reports them, so that the list of accepted refusal kinds lives in
 * one place.
 *
 *   corpus_create [--no-validation] [--spec ID=VALUE,...] FILE.spv [[--spec ...] FILE.spv]...
 *
 * `--spec` gives the next module (only) those specialization constants instead of its defaults.
 * The validation layer is on by default and each of its messages is printed as
 * `VALIDATION\t<message>`: a module cubec accepts must also be one Vulkan accepts. Exit status: 0
 * every module was handed over (whatever cubec answered) and the layer said nothing, 1 a file
 * could not be read, the device did not open or the layer spoke, 2 usage. */
#include <cubec/cubec.h>

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static unsigned validation_messages;

static void on_validation(void *user, const char *message)
{
    (void)user;
    validation_messages++;
    printf("VALIDATION\t%s\n", message);
}

/* The file's bytes as SPIR-V words (NULL and a message if it cannot be read or is no whole
 * number of words). */
static uint32_t *read_words(const char *path, size_t *out_words)
{
    FILE *f = fopen(path, "rb");
    if (!f) {
        fprintf(stderr, "corpus_create: cannot open %s\n", path);
        return NULL;
    }
    uint32_t *words = NULL;
    size_t cap = 0, n = 0;
    for (;;) {
        if (n == cap) {
            cap = cap ? cap * 2 : 4096;
            uint32_t *grown = realloc(words, cap * sizeof *words);
            if (!grown) break;
            words = grown;
        }
        size_t got = fread(words + n, sizeof *words, cap - n, f);
        n += got;
        if (got == 0) break;
    }
    int bad = ferror(f) || !feof(f) || n == 0;
    fclose(f);
    if (bad) {
        fprintf(stderr, "corpus_create: cannot read %s as SPIR-V words\n", path);
        free(words);
        return NULL;
    }
    *out_words = n;
    return words;
}

/* The module's name: its file name without directory and ".spv". */
static void module_name(const char *path, char *out, size_t cap)
{
    const char *base = strrchr(path, '/');
    base = base ? base + 1 : path;
    snprintf(out, cap, "%s", base);
    size_t len = strlen(out);
    if (len > 4 && strcmp(out + len - 4, ".spv") == 0) out[len - 4] = '\0';
}

/* Parses "ID=VALUE,ID=VALUE..." into `out` (at most `cap`); returns the count, or -1. */
static int parse_spec(const char *text, cubec_spec_constant *out, int cap)
{
    int n = 0;
    const char *p = text;
    while (*p) {
        char *end = NULL;
        unsigned long id = strtoul(p, &end, 10);
        if (end == p || *end != '=' || n == cap) return -1;
        p = end + 1;
        unsigned long value = strtoul(p, &end, 0);
        if (end == p || (*end != ',' && *end != '\0')) return -1;
        out[n].id = (uint32_t)id;
        out[n].value = (uint32_t)value;
        n++;
        p = *end ? end + 1 : end;
    }
    return n;
}

/* Messages may span lines; the report keeps one module per line. */
static void print_one_line(const char *text)
{
    for (const char *c = text; *c; c++)
        putchar(*c == '\n' || *c == '\t' ? ' ' : *c);
}

int main(int argc, char **argv)
{
    int first = 1, validation = 1;
    if (argc > 1 && strcmp(argv[1], "--no-validation") == 0) {
        validation = 0;
        first = 2;
    }
    if (first >= argc) {
        fprintf(stderr,
                "usage: corpus_create [--no-validation] [--spec ID=VALUE,...] FILE.spv...\n");
        return 2;
    }
    cubec_device_desc desc = {.struct_size = sizeof(cubec_device_desc),
                              .validation = validation,
                              .on_validation = on_validation};
    cubec_device *device = NULL;
    cubec_status st = cubec_device_open(&desc, &device);
    if (st) {
        fprintf(stderr, "corpus_create: cubec_device_open: %s\n", cubec_status_message(st));
        cubec_status_free(st);
        return 1;
    }
    int rc = 0;
    cubec_spec_constant spec[CUBEC_MAX_SPEC_CONSTANTS];
    int spec_count = 0;
    for (int i = first; i < argc; i++) {
        if (strcmp(argv[i], "--spec") == 0) {
            spec_count =
                i + 1 < argc ? parse_spec(argv[i + 1], spec, CUBEC_MAX_SPEC_CONSTANTS) : -1;
            if (spec_count < 0) {
                fprintf(stderr, "corpus_create: --spec wants ID=VALUE,... (got %s)\n",
                        i + 1 < argc ? argv[i + 1] : "nothing");
                cubec_device_close(device);
                return 2;
            }
            i++;
            continue;
        }
        size_t words = 0;
        uint32_t *spirv = read_words(argv[i], &words);
        if (!spirv) {
            rc = 1;
            continue;
        }
        char name[256];
        module_name(argv[i], name, sizeof name);
        cubec_kernel_desc kd = CUBEC_KERNEL_DESC_INIT;
        kd.name = name;
        kd.spirv = spirv;
        kd.spirv_words = words;
        kd.spec_constants = spec_count ? spec : NULL;
        kd.spec_constant_count = (uint32_t)spec_count;
        spec_count = 0; /* for this module only */
        cubec_kernel kernel = {0};
        st = cubec_kernel_create(device, &kd, &kernel);
        if (st) {
            printf("REFUSED\t%s\t%s\t", name, cubec_code_name(cubec_status_code(st)));
            print_one_line(cubec_status_message(st));
            putchar('\n');
            cubec_status_free(st);
        } else {
            printf("ACCEPTED\t%s\n", name);
            cubec_status dst = cubec_kernel_destroy(device, kernel);
            if (dst) {
                fprintf(stderr, "corpus_create: cubec_kernel_destroy(%s): %s\n", name,
                        cubec_status_message(dst));
                cubec_status_free(dst);
                rc = 1;
            }
        }
        fflush(stdout);
        free(spirv);
    }
    cubec_device_close(device);
    if (validation_messages) rc = 1;
    return rc;
}
