/* A Chrome trace-event writer: the timeline of what a device did, for Perfetto (ui.perfetto.dev)
 * and chrome://tracing.
 *
 * Events are buffered in memory and written, all of them, at trace_write and trace_close, in the
 * JSON Object Format ({"traceEvents":[...],"displayTimeUnit":"ns","otherData":{...}}). Writing
 * only when asked keeps the cost of an event to a copy into memory, which matters because the
 * device records events under its lock; it also lets the writer sort the events and make the
 * timestamps relative to the earliest one, so the numbers in the file stay small and exact. A
 * trace may be written several times (a process whose devices come and go writes it each time
 * the last one closes): each write replaces the file with every event recorded so far.
 *
 * The layout in the viewer: one process (pid 1) whose name trace_set_process_name gives, and one
 * row per track: the host's row (tid 0) first, then one per stream (tid = number + 1),
 * named "stream <number> (slot <slot>)" by trace_track. The host row comes first.
 *
 * Every function is thread-safe (a trace has its own mutex: several devices may share one) and
 * accepts a NULL trace, as a no-op, so callers need no "is tracing on" test of their own. Memory
 * is capped: past the event limit events are counted, not stored, and the count of dropped
 * events is written in otherData. */
#ifndef CUBEC_PROFILING_TRACE_H
#define CUBEC_PROFILING_TRACE_H

#include <stddef.h>
#include <stdint.h>

/* The default cap on buffered events: about 160 MiB of records plus their strings. */
#define TRACE_MAX_EVENTS ((size_t)4 * 1000 * 1000)

typedef struct trace trace;

/* Opens a trace that will be written to `path` by trace_write and trace_close. The file is
 * created (or truncated) now, so an unwritable path fails here rather than after the work was
 * traced. A relative path is resolved now: a later chdir does not move the file. The path must be
 * a regular file or not exist: a FIFO, a device or a directory is refused without blocking
 * (base/file.h), here and at every later write.
 * Returns NULL and sets *out_error (when non-NULL) to a malloc'd message naming the path. */
trace *trace_open(const char *path, char **out_error);

/* The process row's name, e.g. "cubec: NVIDIA H200 (device 0)". The default is "cubec". */
void trace_set_process_name(trace *t, const char *name);

/* The host's track: every other track is a stream number (0 included: the `single` policy's
 * stream). In the file the host is tid 0 and stream n is tid n + 1. */
#define TRACE_HOST UINT64_MAX

/* Declares the track of a stream (idempotent: the first slot given is kept): its row is named
 * "stream <number> (slot <slot>)". The host track is named "host" and always present; declaring
 * TRACE_HOST changes nothing. Events on a track never declared still get a row, "stream <n>". */
void trace_track(trace *t, uint64_t stream, uint32_t slot);

/* A complete event ("ph":"X") on a track (TRACE_HOST or a stream number). Timestamps are in
 * nanoseconds on one time base (the caller's CLOCK_MONOTONIC-based time). `name` is escaped by
 * the writer (kernel names may hold quotes, backslashes, control characters or invalid UTF-8).
 * `category` is a short string such as "launch", "write", "read", "copy", "compile", "submit",
 * "sync" or "profile". `args_json` is NULL or the inside of a JSON object formatted by the
 * caller, e.g. "\"grid\":[4,1,1],\"slot\":2"; it is copied as is, not validated. */
void trace_complete(trace *t, uint64_t track, const char *name, const char *category,
                    uint64_t ts_ns, uint64_t dur_ns, const char *args_json);

/* An instant event ("ph":"i", scope thread), with the arguments of trace_complete. */
void trace_instant(trace *t, uint64_t track, const char *name, const char *category, uint64_t ts_ns,
                   const char *args_json);

/* The number of events buffered so far (dropped ones are not counted). */
size_t trace_event_count(const trace *t);

/* Changes the cap on buffered events (TRACE_MAX_EVENTS by default); events already buffered
 * stay. Tests use it to reach the cap quickly. */
void trace_set_event_limit(trace *t, size_t max_events);

/* Writes every event recorded so far to the trace's path, replacing what the file held (a
 * write after the first opens the path again, truncating it), and keeps the events: later ones
 * are added to them, and a later trace_write or trace_close writes them all. Events are sorted by
 * track, then timestamp (a longer event first when two start together, so an enclosing event
 * precedes what it encloses; else in the order they were added); ts and dur are written in
 * microseconds with 3 decimals, relative to the earliest event; metadata events name the process
 * and every row and put the host row first. The file is closed when this returns, so it is
 * complete on disk even if the process ends without trace_close. Events added by other threads
 * meanwhile wait for the write to finish. Returns 0, or -1 when writing failed (then *out_error,
 * when non-NULL, is a malloc'd message naming the path; the events are kept, so a later write
 * may still succeed). NULL is accepted and returns 0. */
int trace_write(trace *t, char **out_error);

/* trace_write, then frees the trace (whether or not the write succeeded). Returns what
 * trace_write returned; NULL is accepted and returns 0. */
int trace_close(trace *t, char **out_error);

/* Frees the trace without writing it: for a trace written already, whose file the program may
 * have removed since (rewriting it would bring the file back). NULL is accepted. */
void trace_discard(trace *t);

#endif
