#!/usr/bin/env python3
"""Renders a cubec trace (Chrome trace-event JSON, src/profiling/trace.c) to a PNG timeline.

usage: render_trace.py TRACE.json OUT.png [--title T] [--window START_US:END_US]

One horizontal row per track, the host first and then the streams in the writer's order
(thread_sort_index, else tid); a bar per complete event, coloured by category; instants as
triangles at the top of their row; names drawn inside bars that are wide enough. Events nested on
one row (an event inside another) are stacked in lanes, as Perfetto shows them. The x axis is in
microseconds from the trace's earliest event; --window zooms to a range of it.

This is for pictures in documents, not part of the build: it needs matplotlib
(Debian: apt-get install python3-matplotlib).
"""

import argparse
import json
import sys

# Fixed colours for the writer's categories, so that pictures in different documents agree.
CATEGORY_COLOURS = {
    "launch": "#4C72B0",
    "write": "#DD8452",
    "read": "#55A868",
    "copy": "#8172B3",
    "compile": "#937860",
    "submit": "#DA8BC3",
    "sync": "#8C8C8C",
    "profile": "#CCB974",
}
OTHER_COLOURS = ["#64B5CD", "#C44E52", "#17BECF", "#BCBD22", "#FF9896", "#AEC7E8", "#98DF8A"]

MAX_LABELS = 3000  # beyond this many names the picture is unreadable anyway, and slow to draw


def parse_window(text):
    try:
        start, end = (float(part) for part in text.split(":"))
    except ValueError:
        raise argparse.ArgumentTypeError(f"--window wants START_US:END_US, not {text!r}")
    if not end > start:
        raise argparse.ArgumentTypeError(f"--window {text}: END must be greater than START")
    return start, end


def display_text(text):
    """Text as matplotlib should show it: control characters visible, '$' not math."""
    escapes = {"\n": "\\n", "\t": "\\t", "\r": "\\r"}
    shown = "".join(
        ch if ch >= " " else escapes.get(ch, "\\x%02x" % ord(ch)) for ch in str(text)
    )
    return shown.replace("$", r"\$")


def load(path):
    with open(path, encoding="utf-8") as f:
        trace = json.load(f)
    events = trace["traceEvents"] if isinstance(trace, dict) else trace
    names, sort_index, process_names = {}, {}, {}
    bars, instants = [], []
    for event in events:
        if not isinstance(event, dict):
            continue
        ph = event.get("ph")
        row = (event.get("pid", 0), event.get("tid", 0))
        args = event.get("args") if isinstance(event.get("args"), dict) else {}
        if ph == "M":
            if event.get("name") == "thread_name":
                names[row] = args.get("name", "")
            elif event.get("name") == "thread_sort_index":
                sort_index[row] = args.get("sort_index", 0)
            elif event.get("name") == "process_name":
                process_names[row[0]] = args.get("name", "")
            continue
        ts = event.get("ts")
        if not isinstance(ts, (int, float)):
            continue
        name, cat = event.get("name", ""), event.get("cat", "")
        if ph == "X" and isinstance(event.get("dur"), (int, float)):
            bars.append((row, float(ts), float(event["dur"]), name, cat))
        elif ph in ("i", "I"):
            instants.append((row, float(ts), name, cat))
    return names, sort_index, process_names, bars, instants


def row_order(names, sort_index, bars, instants):
    rows = set(names) | {b[0] for b in bars} | {i[0] for i in instants}

    def key(row):
        pid, tid = row
        tid_key = tid if isinstance(tid, (int, float)) else float("inf")
        return (str(pid), sort_index.get(row, float("inf")), tid_key, str(tid))

    return sorted(rows, key=key)


def lanes(bars):
    """The nesting depth of each bar within its row: an event that starts inside another is
    drawn one lane below it."""
    depth = [0] * len(bars)
    by_row = {}
    for i, (row, ts, dur, _, _) in enumerate(bars):
        by_row.setdefault(row, []).append(i)
    for indices in by_row.values():
        indices.sort(key=lambda i: (bars[i][1], -bars[i][2]))
        open_ends = []
        for i in indices:
            ts, dur = bars[i][1], bars[i][2]
            while open_ends and open_ends[-1] <= ts:
                open_ends.pop()
            depth[i] = len(open_ends)
            open_ends.append(ts + dur)
    return depth


def colour_of(cat, assigned):
    if cat in CATEGORY_COLOURS:
        return CATEGORY_COLOURS[cat]
    if cat not in assigned:
        assigned[cat] = OTHER_COLOURS[len(assigned) % len(OTHER_COLOURS)]
    return assigned[cat]


def text_colour(hex_colour):
    r, g, b = (int(hex_colour[i : i + 2], 16) / 255 for i in (1, 3, 5))
    return "black" if 0.299 * r + 0.587 * g + 0.114 * b > 0.6 else "white"


def render(args):
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
        from matplotlib.patches import Patch
    except ImportError:
        sys.exit(
            "render_trace: matplotlib is missing (Debian: apt-get install python3-matplotlib, "
            "then run this with /usr/bin/python3)"
        )

    names, sort_index, process_names, bars, instants = load(args.trace)
    rows = row_order(names, sort_index, bars, instants)
    if not bars and not instants:
        sys.exit(f"render_trace: {args.trace} has no events")
    row_y = {row: i for i, row in enumerate(rows)}
    depth = lanes(bars)
    row_lanes = {}
    for (row, *_), d in zip(bars, depth):
        row_lanes[row] = max(row_lanes.get(row, 1), d + 1)

    if args.window:
        lo, hi = args.window
    else:
        ends = [ts + dur for _, ts, dur, _, _ in bars] + [ts for _, ts, _, _ in instants]
        starts = [ts for _, ts, _, _, _ in bars] + [ts for _, ts, _, _ in instants]
        lo, hi = min(starts), max(ends)
        if hi <= lo:
            hi = lo + 1.0
        margin = (hi - lo) * 0.01
        lo, hi = lo - margin, hi + margin

    width_in, dpi = 16.0, 150
    fig_height = 1.2 + 0.55 * sum(max(1.0, 0.6 * row_lanes.get(row, 1)) for row in rows)
    fig, ax = plt.subplots(figsize=(width_in, fig_height), dpi=dpi)
    # Rows get heights proportional to their lanes, so nested events stay legible.
    heights = [max(1.0, 0.6 * row_lanes.get(row, 1)) for row in rows]
    tops, y = [], 0.0
    for h in heights:
        tops.append(y)
        y += h
    total_height = y

    assigned = {}
    used_categories = []
    by_category = {}
    for (row, ts, dur, name, cat), d in zip(bars, depth):
        if ts + dur < lo or ts > hi:
            continue
        i = row_y[row]
        lane_h = heights[i] * 0.84 / row_lanes.get(row, 1)
        y0 = tops[i] + heights[i] * 0.08 + d * lane_h
        by_category.setdefault(cat, []).append((ts, dur, y0, lane_h, name))
        if cat not in used_categories:
            used_categories.append(cat)

    # Pixels per microsecond, to decide which names fit in their bar.
    fig.subplots_adjust(left=0.14, right=0.985, top=1 - 0.6 / fig_height, bottom=0.65 / fig_height)
    axis_px = fig.get_figwidth() * dpi * (0.985 - 0.14)
    px_per_us = axis_px / (hi - lo)
    font_pt = 7
    char_px = font_pt * dpi / 72 * 0.6
    labels = 0
    for cat, items in by_category.items():
        colour = colour_of(cat, assigned)
        # One call per lane: a call per bar is far too slow for a trace of a million events.
        spans = {}
        for ts, dur, y0, h, name in items:
            # A zero-length event is still one pixel wide, so it is seen.
            spans.setdefault((y0, h), []).append((ts, max(dur, 1.0 / px_per_us)))
        for (y0, h), xranges in spans.items():
            ax.broken_barh(xranges, (y0, h), facecolors=colour, edgecolor="none")
        for ts, dur, y0, h, name in items:
            if labels >= MAX_LABELS:
                break
            left, right = max(ts, lo), min(ts + dur, hi)
            room = (right - left) * px_per_us - 4
            text = display_text(name)
            if room < char_px * 3 or not text:
                continue
            fits = int(room // char_px)
            if len(text) > fits:
                text = text[: max(fits - 1, 1)] + "\u2026"
            ax.text(
                (left + right) / 2,
                y0 + h / 2,
                text,
                ha="center",
                va="center",
                fontsize=font_pt,
                color=text_colour(colour),
                clip_on=True,
            )
            labels += 1

    for row, ts, name, cat in instants:
        if ts < lo or ts > hi:
            continue
        colour = colour_of(cat, assigned)
        i = row_y[row]
        ax.plot([ts], [tops[i] + heights[i] * 0.08], marker="v", color=colour, markersize=6,
                markeredgecolor="black", markeredgewidth=0.4, zorder=5)
        if cat not in used_categories:
            used_categories.append(cat)

    def row_label(row):
        label = names.get(row, f"tid {row[1]}")
        if len(process_names) > 1:
            label = f"{process_names.get(row[0], row[0])}: {label}"
        return display_text(label)

    ax.set_yticks([tops[i] + heights[i] / 2 for i in range(len(rows))])
    ax.set_yticklabels([row_label(row) for row in rows], fontsize=8)
    for top in tops[1:]:
        ax.axhline(top, color="#dddddd", linewidth=0.6, zorder=0)
    ax.set_ylim(total_height, 0)  # the first row (the host) at the top
    ax.set_xlim(lo, hi)
    ax.set_xlabel("time (\u00b5s from the first event)")
    ax.grid(axis="x", color="#eeeeee", linewidth=0.6)
    ax.set_axisbelow(True)
    title = args.title
    if title is None and len(process_names) == 1:
        title = next(iter(process_names.values()))
    if title:
        ax.set_title(display_text(title), fontsize=11, loc="left")
    handles = [
        Patch(facecolor=colour_of(c, assigned), label=display_text(c or "(none)"))
        for c in used_categories
    ]
    if handles:
        # Above the plot, right of the title: inside it would hide bars.
        ax.legend(handles=handles, loc="lower right", bbox_to_anchor=(1.0, 1.0), fontsize=7,
                  ncol=min(len(handles), 8), frameon=False, borderaxespad=0.2)
    fig.savefig(args.out, dpi=dpi)
    plt.close(fig)
    return len(rows), sum(len(v) for v in by_category.values())


def main(argv=None):
    parser = argparse.ArgumentParser(description="Renders a cubec trace to a PNG timeline.")
    parser.add_argument("trace", metavar="TRACE.json")
    parser.add_argument("out", metavar="OUT.png")
    parser.add_argument("--title", help="the picture's title (default: the process name)")
    parser.add_argument("--window", type=parse_window, metavar="START_US:END_US",
                        help="zoom to this range of the time axis")
    args = parser.parse_args(argv)
    try:
        rows, drawn = render(args)
    except (OSError, ValueError, KeyError) as e:
        sys.exit(f"render_trace: {args.trace}: {e}")
    print(f"render_trace: {args.out}: {rows} rows, {drawn} bars")
    return 0


if __name__ == "__main__":
    sys.exit(main())
