#!/usr/bin/env python3
"""Checks a Chrome trace-event file written by cubec (src/profiling/trace.c).

usage: check_trace.py FILE [--launches N] [--min-streams K] [--kernel NAME ...] [--submit-streams]

The structure is checked always: the file is JSON with a "traceEvents" list; every complete
event ("ph":"X") has a name, a pid, a tid and numeric ts >= 0 and dur >= 0; within each row
(pid, tid) the complete events are in non-decreasing ts order in the file (the order the writer
promises); and every row that carries events is named by a thread_name metadata event, so no
row shows up in the viewer as a bare number. Every "submit" event names the stream whose work it
carries (args.stream >= 1, the first of args.streams when it carries several; null only for a
batch of no task, a host barrier alone); every launch of a copy or fill (a transfer command, or a builtin
"cubec.copy*" / "cubec.fill" kernel) carries the bytes it writes (args.bytes > 0), and no launch
has the grid [0, 0, 0]. The options check the content: exactly N events of
category "launch", launches on at least K distinct stream rows (tid != 0; tid 0 is the host),
and each named kernel among the launches; with --submit-streams, every stream a submit names has
launch events (not for traces of lost work, whose launches may go untimed).

Prints a one-line summary and exits 0, or prints every failed check and exits 1. Standard
library only, so it runs wherever the tests run.
"""

import argparse
import json
import math
import sys

MAX_REPORTED = 10  # per kind of failure: one broken writer should not print a million lines


def is_number(value):
    # bool is an int in Python, but true is not a timestamp.
    return isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value)


class Failures:
    def __init__(self):
        self.messages = []
        self.counts = {}

    def add(self, kind, message):
        n = self.counts.get(kind, 0) + 1
        self.counts[kind] = n
        if n <= MAX_REPORTED:
            self.messages.append(message)
        elif n == MAX_REPORTED + 1:
            self.messages.append(f"(further '{kind}' failures not shown)")

    def __bool__(self):
        return bool(self.counts)


def describe(index, event):
    name = event.get("name") if isinstance(event, dict) else None
    return f"event #{index} ({json.dumps(name)})" if name is not None else f"event #{index}"


def is_stream(value):
    return isinstance(value, int) and not isinstance(value, bool) and value >= 1


def check_attribution(events, failures, submit_streams):
    """Submits name their streams; copies and fills their size (see the module's text)."""
    launch_streams = set()
    for event in events:
        if isinstance(event, dict) and event.get("cat") == "launch" and event.get("ph") == "X":
            stream = (event.get("args") or {}).get("stream")
            if is_stream(stream):
                launch_streams.add(stream)
    for index, event in enumerate(events):
        if not isinstance(event, dict) or event.get("ph") != "X":
            continue
        what = describe(index, event)
        args = event.get("args")
        args = args if isinstance(args, dict) else {}
        if event.get("cat") == "submit" and event.get("name") == "submit":
            stream, streams = args.get("stream"), args.get("streams")
            if stream is None and args.get("tasks") == 0 and streams is None:
                continue  # a host barrier alone: no stream's work
            if not is_stream(stream):
                failures.add("submit", f"{what}: args.stream {stream!r} is not a stream >= 1")
                continue
            named = [stream]
            if streams is not None:
                if (
                    not isinstance(streams, list)
                    or not streams
                    or not all(is_stream(s) for s in streams)
                    or streams[0] != stream
                ):
                    failures.add(
                        "submit", f"{what}: args.streams {streams!r} is not a list from {stream}"
                    )
                    continue
                named = streams
            if submit_streams:
                for s in named:
                    if s not in launch_streams:
                        failures.add(
                            "submit",
                            f"{what}: carries stream {s}, which has no launch events "
                            f"(launches are on {sorted(launch_streams)})",
                        )
        if event.get("cat") == "launch":
            name = event.get("name")
            builtin = isinstance(name, str) and (
                name.startswith("cubec.copy") or name == "cubec.fill"
            )
            if args.get("grid") == [0, 0, 0]:
                failures.add("grid", f"{what}: grid [0, 0, 0]")
            if builtin or args.get("command") == "transfer":
                size = args.get("bytes")
                if not isinstance(size, int) or isinstance(size, bool) or size <= 0:
                    failures.add("bytes", f"{what}: a copy or fill without args.bytes > 0")


def check(trace, args, failures):
    """Returns the facts of the summary line; failed checks go to `failures`."""
    if not isinstance(trace, dict):
        failures.add("format", "the top level is not an object with \"traceEvents\"")
        return None
    events = trace.get("traceEvents")
    if not isinstance(events, list):
        failures.add("format", "\"traceEvents\" is missing or not a list")
        return None

    named_rows = set()  # (pid, tid) with a thread_name
    rows_with_events = {}  # (pid, tid) -> index of the first event, for the message
    last_ts = {}  # (pid, tid) -> (ts, index) of the last complete event in file order
    complete = instants = 0
    launches = []  # (name, tid)

    for index, event in enumerate(events):
        if not isinstance(event, dict):
            failures.add("format", f"event #{index} is not an object")
            continue
        ph = event.get("ph")
        row = (event.get("pid"), event.get("tid"))
        if ph == "M":
            if event.get("name") == "thread_name":
                named = event.get("args", {})
                if isinstance(named, dict) and isinstance(named.get("name"), str):
                    named_rows.add(row)
                else:
                    failures.add(
                        "metadata", f"{describe(index, event)}: thread_name without args.name"
                    )
            continue
        rows_with_events.setdefault(row, index)
        if ph == "i" or ph == "I":
            instants += 1
        if event.get("cat") == "launch":
            launches.append((event.get("name"), event.get("tid")))
        if ph != "X":
            continue
        complete += 1
        what = describe(index, event)
        missing = [key for key in ("name", "pid", "tid", "ts", "dur") if key not in event]
        if missing:
            failures.add("fields", f"{what}: missing {', '.join(missing)}")
        if "name" in event and not isinstance(event["name"], str):
            failures.add("fields", f"{what}: name is not a string")
        ts, dur = event.get("ts"), event.get("dur")
        if "ts" in event and (not is_number(ts) or ts < 0):
            failures.add("fields", f"{what}: ts {ts!r} is not a number >= 0")
            ts = None
        if "dur" in event and (not is_number(dur) or dur < 0):
            failures.add("fields", f"{what}: dur {dur!r} is not a number >= 0")
        if ts is None:
            continue
        previous = last_ts.get(row)
        if previous is not None and ts < previous[0]:
            failures.add(
                "order",
                f"{what}: ts {ts} on pid {row[0]} tid {row[1]} comes after ts {previous[0]} "
                f"(event #{previous[1]}) in the file",
            )
        last_ts[row] = (ts, index)

    for row, first in sorted(rows_with_events.items(), key=lambda item: item[1]):
        if row not in named_rows:
            failures.add(
                "names",
                f"pid {row[0]} tid {row[1]} carries events (first: #{first}) "
                "but has no thread_name",
            )

    check_attribution(events, failures, args.submit_streams)

    launch_streams = {tid for _, tid in launches if tid != 0}
    if args.launches is not None and len(launches) != args.launches:
        failures.add("launches", f"{len(launches)} launch events, expected {args.launches}")
    if args.min_streams is not None and len(launch_streams) < args.min_streams:
        failures.add(
            "streams",
            f"launches on {len(launch_streams)} stream rows {sorted(launch_streams, key=str)}, "
            f"expected at least {args.min_streams}",
        )
    launched = {name for name, _ in launches}
    for kernel in args.kernel or []:
        if kernel not in launched:
            failures.add("kernels", f"kernel {json.dumps(kernel)} is not among the launch events")

    other = trace.get("otherData")
    dropped = other.get("dropped_events", 0) if isinstance(other, dict) else 0
    return {
        "events": len(events),
        "complete": complete,
        "instants": instants,
        "rows": len(rows_with_events),
        "launches": len(launches),
        "streams": len(launch_streams),
        "dropped": dropped,
    }


def main(argv=None):
    parser = argparse.ArgumentParser(description="Checks a cubec Chrome trace-event file.")
    parser.add_argument("file", metavar="FILE")
    parser.add_argument(
        "--launches", type=int, metavar="N", help="exactly N events of category launch"
    )
    parser.add_argument(
        "--min-streams",
        type=int,
        metavar="K",
        help="launch events on at least K stream rows (tid != 0)",
    )
    parser.add_argument(
        "--kernel",
        nargs="+",
        action="extend",
        metavar="NAME",
        help="kernel names that must be launched (the option may repeat)",
    )
    parser.add_argument(
        "--submit-streams",
        action="store_true",
        help="every stream a submit event names has launch events",
    )
    args = parser.parse_args(argv)

    try:
        with open(args.file, encoding="utf-8") as f:
            trace = json.load(f)
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as e:
        print(f"check_trace: FAIL: {args.file}: {e}")
        return 1

    failures = Failures()
    facts = check(trace, args, failures)
    if failures:
        print(f"check_trace: FAIL: {args.file}: {sum(failures.counts.values())} failed checks")
        for message in failures.messages:
            print(f"  {message}")
        return 1
    dropped = f", {facts['dropped']} DROPPED" if facts["dropped"] else ""
    print(
        f"check_trace: OK: {args.file}: {facts['events']} events ({facts['complete']} complete, "
        f"{facts['instants']} instant) on {facts['rows']} rows; {facts['launches']} launches on "
        f"{facts['streams']} streams{dropped}"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
