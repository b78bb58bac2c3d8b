#!/bin/sh
# Every function cubec.h declares has a row in api_model_calls (tests/common/api_model.c), and the
# step that row names calls it: a public call added without a model step fails here.
# Usage: api_model_covers_header.sh include/cubec/cubec.h tests/common/api_model.c
hdr=$1
model=$2
fail=0
count=0
for call in $(grep -oE '\bcubec_[a-z_0-9]+\(' "$hdr" | tr -d '(' | sort -u); do
    count=$((count + 1))
    step=$(grep -oE "\{\"$call\", \"[a-z_0-9]+\"\}" "$model" | sed -E 's/.*, "([a-z_0-9]+)".*/\1/')
    if [ -z "$step" ]; then
        echo "FAIL: $call has no row in api_model_calls"
        fail=1
        continue
    fi
    # The step's body, from its definition to the closing brace in column 0, calls it.
    if ! awk -v f="$step" -v c="$call(" '
        $0 ~ ("^(static )?[a-z_ *]*[ *]" f "\\(") { on = 1 }
        on && index($0, c) { found = 1 }
        on && /^}/ { on = 0 }
        END { exit !found }' "$model"; then
        echo "FAIL: $call: its step $step does not call it"
        fail=1
    fi
done
if [ "$count" -lt 70 ]; then
    echo "FAIL: only $count functions found in $hdr"
    fail=1
fi
[ $fail = 0 ] && echo "all $count public calls of $hdr have a model step"
exit $fail
