/* The snapshot of a GLSL kernel's included files (see glsl_sources.h). */
#include "kernel/glsl_sources.h"

#include "base/array.h"
#include "base/strfmt.h"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

/* One #include as resolved: who asked for which name, and what it gave. */
typedef struct resolution {
    const glsl_source_file *requester; /* NULL: the kernel's own source */
    char *name;
    int system;
    const glsl_source_file *file; /* NULL: not found */
    char *why;                    /* not found: where it was looked for */
} resolution;

struct glsl_sources {
    char *source_dir; /* the directory of the kernel's source path ("" for the current one), or
                         NULL when the source came from no file */
    char **dirs;
    uint32_t dir_count;
    glsl_source_file **files; /* each allocated alone: resolutions and includers point to them */
    uint32_t file_count, file_cap;
    resolution *res;
    uint32_t res_count, res_cap;
    uint64_t max_bytes, total_bytes;
    /* What the gather found: the digest covers these alone, so that resolutions the compiler
     * makes later (a build's own) leave the kernel's keys as they were computed. */
    uint32_t gathered_files, gathered_res;
};

static char *dup_n(const char *s, size_t n)
{
    char *out = malloc(n + 1);
    if (!out) return NULL;
    memcpy(out, s, n);
    out[n] = '\0';
    return out;
}

/* The directory part of a path: "" when it has none (the current directory). */
static char *dir_of(const char *path)
{
    const char *slash = strrchr(path, '/');
    return slash ? dup_n(path, slash == path ? 1 : (size_t)(slash - path)) : dup_n("", 0);
}

static char *join(const char *dir, const char *name)
{
    if (name[0] == '/' || !dir[0]) return strfmt("%s", name);
    size_t n = strlen(dir);
    return strfmt("%s%s%s", dir, dir[n - 1] == '/' ? "" : "/", name);
}

const glsl_source_file *glsl_sources_find(const glsl_sources *s, const char *path)
{
    for (uint32_t i = 0; s && i < s->file_count; i++)
        if (strcmp(s->files[i]->path, path) == 0) return s->files[i];
    return NULL;
}

/* Reads `path` into the snapshot. 1: read (or had already); 0: no such regular file; -1: it
 * exists but could not be taken (unreadable, over the byte limit, host memory): *why says so. */
static int read_file(glsl_sources *s, const char *path, const glsl_source_file **out, char **why)
{
    *out = glsl_sources_find(s, path);
    if (*out) return 1;
    struct stat st;
    if (stat(path, &st) != 0 || !S_ISREG(st.st_mode)) return 0;
    if ((uint64_t)st.st_size > s->max_bytes - s->total_bytes) {
        *why = strfmt("'%s' is %" PRIu64 " bytes, more than the %" PRIu64
                      " bytes left of the source limit ([kernel] max_source_bytes, "
                      "CUBEC_MAX_SOURCE_BYTES) after %" PRIu64 " bytes of included files",
                      path, (uint64_t)st.st_size, s->max_bytes - s->total_bytes, s->total_bytes);
        return -1;
    }
    FILE *f = fopen(path, "rb");
    if (!f) {
        *why = strfmt("'%s' cannot be opened: %s", path, strerror(errno));
        return -1;
    }
    size_t cap = (size_t)st.st_size;
    char *text = malloc(cap + 1);
    size_t n = text ? fread(text, 1, cap, f) : 0;
    int failed = !text || ferror(f);
    fclose(f);
    glsl_source_file *file = failed ? NULL : calloc(1, sizeof *file);
    if (file) {
        text[n] = '\0';
        file->text = text;
        file->length = n;
        file->path = strfmt("%s", path);
    }
    if (!file || !file->path ||
        array_grow((void **)&s->files, &s->file_cap, s->file_count + 1,
                   sizeof(glsl_source_file *)) != 0) {
        if (file) free(file->path);
        free(file);
        free(text);
        *why = strfmt("'%s' cannot be read (%s)", path, failed ? "read error" : "host memory");
        return -1;
    }
    s->files[s->file_count++] = file;
    s->total_bytes += n;
    *out = file;
    return 1;
}

/* Where `name` (included by `requester`) is looked for, as text for the message of a miss. */
static char *searched(const glsl_sources *s, const glsl_source_file *requester, int system)
{
    char *list = strfmt("%s", "");
    int any = 0;
    if (!system && list) {
        char *dir = requester ? dir_of(requester->path) : NULL;
        const char *d = requester ? dir : s->source_dir;
        if (d) {
            char *more = strfmt("'%s' (the including file's directory)", d[0] ? d : ".");
            free(list);
            list = more;
            any = 1;
        }
        free(dir);
    }
    for (uint32_t i = 0; list && i < s->dir_count; i++) {
        char *more = strfmt("%s%s'%s'", list, any ? ", " : "", s->dirs[i]);
        free(list);
        list = more;
        any = 1;
    }
    if (!list) return NULL;
    if (!any) {
        free(list);
        return strfmt("%s", system ? "not found: no include directory to search (the kernel has "
                                     "no include_dirs)"
                                   : "not found: no directory to search (the kernel has no "
                                     "glsl_path and no include_dirs)");
    }
    char *out = strfmt("not found in %s", list);
    free(list);
    return out;
}

/* Tries `dir`/`name`: 1 found, 0 not there, -1 there but not taken (*why set). */
static int try_dir(glsl_sources *s, const char *dir, const char *name, const glsl_source_file **out,
                   char **why)
{
    char *path = join(dir, name);
    if (!path) {
        *why = strfmt("%s", "host out of memory");
        return -1;
    }
    int r = read_file(s, path, out, why);
    free(path);
    return r;
}

static const glsl_source_file *resolve_from_disk(glsl_sources *s, const glsl_source_file *requester,
                                                 const char *name, int system, char **why)
{
    const glsl_source_file *file = NULL;
    int r = 0;
    if (name[0] == '/') {
        r = read_file(s, name, &file, why);
    } else {
        if (!system) {
            char *dir = requester ? dir_of(requester->path) : NULL;
            const char *d = requester ? dir : s->source_dir;
            if (d) r = try_dir(s, d, name, &file, why);
            free(dir);
        }
        for (uint32_t i = 0; r == 0 && i < s->dir_count; i++)
            r = try_dir(s, s->dirs[i], name, &file, why);
    }
    if (r == 0) *why = searched(s, requester, system);
    return r == 1 ? file : NULL;
}

static resolution *find_resolution(glsl_sources *s, const glsl_source_file *requester,
                                   const char *name, int system)
{
    for (uint32_t i = 0; i < s->res_count; i++) {
        resolution *r = &s->res[i];
        if (r->requester == requester && r->system == system && strcmp(r->name, name) == 0)
            return r;
    }
    return NULL;
}

const glsl_source_file *glsl_sources_resolve(glsl_sources *s, const glsl_source_file *requester,
                                             const char *name, int system, const char **out_why)
{
    static const char no_memory[] = "not resolved: host out of memory";
    *out_why = no_memory;
    resolution *r = find_resolution(s, requester, name, system);
    if (!r) {
        if (array_grow((void **)&s->res, &s->res_cap, s->res_count + 1, sizeof *s->res) != 0)
            return NULL;
        char *why = NULL;
        const glsl_source_file *file = resolve_from_disk(s, requester, name, system, &why);
        r = &s->res[s->res_count];
        *r = (resolution){.requester = requester,
                          .name = strfmt("%s", name),
                          .system = system,
                          .file = file,
                          .why = why};
        if (!r->name) {
            free(why);
            return NULL;
        }
        s->res_count++;
    }
    if (r->file) return r->file;
    /* shaderc asks again for a quoted name that was not found, as <name>: the quoted search was
     * the wider one, and is what the message should list. */
    const resolution *quoted = system ? find_resolution(s, requester, name, 0) : NULL;
    const char *why = quoted && !quoted->file && quoted->why ? quoted->why : r->why;
    if (why) *out_why = why;
    return NULL;
}

/* Resolves every #include line of `text` (whether or not the preprocessor would take it). Only
 * "#", "include" and the name, with blanks between, are recognized: what GLSL projects write. */
static cubec_status scan(glsl_sources *s, const glsl_source_file *requester, const char *text,
                         size_t length)
{
    const char *end = text + length;
    for (const char *line = text; line < end;) {
        const char *eol = memchr(line, '\n', (size_t)(end - line));
        if (!eol) eol = end;
        const char *p = line;
        line = eol + 1;
        while (p < eol && (*p == ' ' || *p == '\t'))
            p++;
        if (p >= eol || *p != '#') continue;
        p++;
        while (p < eol && (*p == ' ' || *p == '\t'))
            p++;
        if (eol - p < 8 || strncmp(p, "include", 7) != 0) continue;
        p += 7;
        while (p < eol && (*p == ' ' || *p == '\t'))
            p++;
        if (p >= eol || (*p != '"' && *p != '<')) continue;
        int system = *p == '<';
        const char *close = memchr(p + 1, system ? '>' : '"', (size_t)(eol - p - 1));
        if (!close || close == p + 1) continue;
        char *name = dup_n(p + 1, (size_t)(close - p - 1));
        if (!name) return status_make(CUBEC_OUT_OF_MEMORY, "host out of memory (include name)");
        const char *why = NULL;
        (void)glsl_sources_resolve(s, requester, name, system, &why);
        free(name);
        /* A file over the limit is the caller's to hear about now, as a source over it is. */
        if (s->total_bytes > s->max_bytes || (why && strstr(why, "source limit")))
            return status_make(CUBEC_INVALID_ARGUMENT, "included files: %s", why);
    }
    return NULL;
}

cubec_status glsl_sources_gather(const char *fn, const char *source, const char *preamble,
                                 const char *source_path, const char *const *dirs,
                                 uint32_t dir_count, uint64_t max_bytes, glsl_sources **out)
{
    *out = NULL;
    glsl_sources *s = calloc(1, sizeof *s);
    if (!s) return status_make(CUBEC_OUT_OF_MEMORY, "%s: host out of memory (includes)", fn);
    /* The kernel's own source counts against the limit already. */
    size_t own = strlen(source);
    s->max_bytes = max_bytes;
    s->total_bytes = own < max_bytes ? own : max_bytes;
    int ok = !source_path || (s->source_dir = dir_of(source_path)) != NULL;
    char **copies = ok && dir_count ? calloc(dir_count, sizeof *copies) : NULL;
    ok = ok && (dir_count == 0 || copies);
    s->dirs = copies;
    for (uint32_t i = 0; ok && copies && i < dir_count; i++, s->dir_count++)
        ok = (copies[i] = strfmt("%s", dirs[i])) != NULL;
    cubec_status err = ok ? scan(s, NULL, source, own)
                          : status_make(CUBEC_OUT_OF_MEMORY, "host out of memory (includes)");
    if (!err && preamble) err = scan(s, NULL, preamble, strlen(preamble));
    /* Files found are appended as they are read: this walks them all, each once. */
    for (uint32_t i = 0; !err && i < s->file_count; i++)
        err = scan(s, s->files[i], s->files[i]->text, s->files[i]->length);
    if (err) {
        glsl_sources_free(s);
        return status_annotate(err, "%s", fn);
    }
    s->gathered_files = s->file_count;
    s->gathered_res = s->res_count;
    *out = s;
    return NULL;
}

void glsl_sources_free(glsl_sources *s)
{
    if (!s) return;
    free(s->source_dir);
    for (uint32_t i = 0; i < s->dir_count; i++)
        free(s->dirs[i]);
    free(s->dirs);
    for (uint32_t i = 0; i < s->file_count; i++) {
        free(s->files[i]->path);
        free(s->files[i]->text);
        free(s->files[i]);
    }
    free(s->files);
    for (uint32_t i = 0; i < s->res_count; i++) {
        free(s->res[i].name);
        free(s->res[i].why);
    }
    free(s->res);
    free(s);
}

int glsl_sources_any(const glsl_sources *s)
{
    return s && (s->gathered_res > 0 || s->gathered_files > 0);
}

static uint64_t index_of(const glsl_sources *s, const glsl_source_file *f)
{
    for (uint32_t i = 0; f && i < s->file_count; i++)
        if (s->files[i] == f) return i;
    return UINT64_MAX;
}

static void add_u64(void (*add)(void *, const void *, size_t), void *ctx, uint64_t v)
{
    add(ctx, &v, sizeof v);
}

static void add_bytes(void (*add)(void *, const void *, size_t), void *ctx, const void *bytes,
                      size_t n)
{
    add_u64(add, ctx, n);
    add(ctx, bytes, n);
}

void glsl_sources_digest(const glsl_sources *s, void (*add)(void *ctx, const void *bytes, size_t n),
                         void *ctx)
{
    if (!s) return;
    add_u64(add, ctx, s->gathered_res);
    for (uint32_t i = 0; i < s->gathered_res; i++) {
        const resolution *r = &s->res[i];
        add_u64(add, ctx, index_of(s, r->requester));
        add_bytes(add, ctx, r->name, strlen(r->name));
        add_u64(add, ctx, (uint64_t)r->system);
        add_u64(add, ctx, index_of(s, r->file));
    }
    add_u64(add, ctx, s->gathered_files);
    for (uint32_t i = 0; i < s->gathered_files; i++) {
        add_bytes(add, ctx, s->files[i]->path, strlen(s->files[i]->path));
        add_bytes(add, ctx, s->files[i]->text, s->files[i]->length);
    }
}
