#!/usr/bin/env bash
# End-to-end check of the terminal dashboard as a person sees it: builds
# sentinel-top, runs it in a tmux pane on a built-in fixture, types keys and
# asserts on the text of the screen (tmux capture-pane).
#
#   scripts/e2e-tmux.sh            # needs tmux (installed with apt-get when missing and root)
set -euo pipefail
cd "$(dirname "$0")/.."

if ! command -v tmux >/dev/null; then
	if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null; then
		apt-get update -qq >/dev/null && apt-get install -y -qq tmux >/dev/null
	else
		echo "e2e-tmux: tmux is needed" >&2
		exit 1
	fi
fi

work=$(mktemp -d)
bin=$work/sentinel-top
sock=sentinel-top-e2e-$$
cleanup() {
	tmux -L "$sock" kill-server 2>/dev/null || true
	rm -rf "$work"
}
trap cleanup EXIT

go build -o "$bin" ./cmd/sentinel-top

passed=0
failed=0
screen() { tmux -L "$sock" capture-pane -p -t e2e; }
keys() { tmux -L "$sock" send-keys -t e2e "$@"; }

# wait_for TEXT...: every TEXT on the screen within 20 s.
wait_for() {
	if on_screen_within 20 "$@"; then
		passed=$((passed + 1))
		return 0
	fi
	echo "FAIL: not on screen: $missing" >&2
	echo "$s" >&2
	failed=$((failed + 1))
	return 1
}

# on_screen_within says whether every text is on screen within SECS
# seconds, counting nothing; s is the screen last seen, missing a text not
# on it.
on_screen_within() {
	local deadline=$((SECONDS + $1)) t
	shift
	while :; do
		s=$(screen)
		missing=
		for t in "$@"; do
			grep -qF -- "$t" <<<"$s" || missing=$t
		done
		[ -z "$missing" ] && return 0
		[ $SECONDS -ge $deadline ] && return 1
		sleep 0.1
	done
}

# wait_gone TEXT: TEXT leaves the screen within 10 s.
wait_gone() {
	local deadline=$((SECONDS + 10))
	while grep -qF -- "$1" <<<"$(screen)"; do
		if [ $SECONDS -ge $deadline ]; then
			echo "FAIL: still on screen: $1" >&2
			screen >&2
			failed=$((failed + 1))
			return 1
		fi
		sleep 0.1
	done
	passed=$((passed + 1))
}

check() { # check NAME CONDITION...
	local name=$1
	shift
	if "$@"; then
		passed=$((passed + 1))
	else
		echo "FAIL: $name" >&2
		failed=$((failed + 1))
	fi
}

# One server for every pane: a session that only waits keeps it up.
tmux -L "$sock" new-session -d -s keep "sleep 3600"

run_pane() { # run_pane COMMAND: a fresh 120x40 pane running COMMAND
	tmux -L "$sock" kill-session -t e2e 2>/dev/null || true
	tmux -L "$sock" new-session -d -s e2e -x 120 -y 40 \
		"$1; echo \"EXIT=\$?\"; sleep 60"
}

set +e

# The replay of a flapping breaker, at 8 times real time; paused once the
# triage names it, so the screens below hold still.
run_pane "$bin --replay sawtooth-db-slow --speed 8"
wait_for "sentinel-top" "replay sawtooth-db-slow" "REPLAY ×8" "BREAKERS" "ALERTS"
wait_for "GET:http://inven" "order"
wait_for "CRIT sawtooth" "✖2"
keys "p"
wait_for "PAUSED +"

# idle: a paused dashboard uses next to no CPU (ticks of 1/CLK_TCK s).
cpu_ticks() { awk '{print $14 + $15}' "/proc/$1/stat"; }
pane_pid=$(tmux -L "$sock" display -p -t e2e '#{pane_pid}')
pid=$(pgrep -P "$pane_pid" -x sentinel-top || true)
if [ -n "$pid" ] && [ -r "/proc/$pid/stat" ]; then
	hz=$(getconf CLK_TCK)
	before=$(cpu_ticks "$pid")
	sleep 5
	used=$(($(cpu_ticks "$pid") - before))
	echo "idle CPU: $used of $((5 * hz)) ticks in 5 s"
	check "idle CPU under 5% (used $used ticks of $((5 * hz)))" test $((used * 20)) -lt $((5 * hz))
fi

# help, and back
keys "?"
wait_for "sentinel-top keys" "GLYPHS" "● CLOSED" "◐ HALF" "✖ OPEN" "pause replay"
keys "?"
wait_for "BREAKERS"

# the sort picker: F6 opens it on the current sort, escape closes it; S
# opens it too, and enter sorts by the column chosen (RESOURCE, two down);
# back to severity (the first, g) for what follows.
keys F6
wait_for "SORT BY" "▸ !▼" "enter sorts · esc closes"
keys Escape
wait_gone "SORT BY"
keys S
wait_for "SORT BY"
keys Down Down Enter
wait_for "RESOURCE▲"
keys S
wait_for "SORT BY"
keys Home Enter
wait_for " !▼ RESOURCE"

# filter, kept with enter, cleared with escape
keys "/"
wait_for "enter keeps"
keys "inven"
wait_for "/inven" "1/2"
keys Enter
wait_gone "/user/info    "
keys Escape
wait_for "/user/info    "

# the worst row (selected from the start) in detail, and back
keys Enter
wait_for "TIMELINE" "order-1" "order-2" "transitions in range" "PASS/S and BLOCK/S"
keys PageDown PageDown
wait_for "RULES" "FINDINGS"
keys Escape
wait_for "BREAKERS" "ALERTS"

# the first alert opens the detail on its finding, its whole text in sight
keys "a" Enter
wait_for "▸ !! CRIT sawtooth" "advice: the downstream stayed down" "raise retryTimeoutMs" "span"
keys Escape
wait_for "BREAKERS" "ALERTS"

# freeze: the view holds while collection goes on
keys Space
wait_for "FROZEN +"
keys Space
wait_gone "FROZEN"

# replay controls
keys "p"
wait_for "REPLAY ×8"
keys ">"
wait_for "REPLAY ×16"

# a small terminal, then back
tmux -L "$sock" resize-window -t e2e -x 50 -y 12
wait_for "need 60x15"
tmux -L "$sock" resize-window -t e2e -x 120 -y 40
wait_for "BREAKERS"

keys "q"
wait_for "EXIT=0"

# Habits: F1 and F10, the jump prompt, and the mouse (--mouse). The
# mouse's clicks are the bytes a terminal sends (SGR reports, 1-based),
# once the pane says the program asked for them.
run_pane "$bin --replay sawtooth-db-slow --speed 8 --mouse"
wait_for "CRIT sawtooth" "inventory-service"
keys "p"
wait_for "PAUSED +"
mouse_flags() { tmux -L "$sock" display -p -t e2e '#{mouse_button_flag}#{mouse_sgr_flag}'; }
check "--mouse asks for button events in SGR (got $(mouse_flags))" test "$(mouse_flags)" = 11
row=$(screen | grep -n "GET:http://inventory-service" | head -1 | cut -d: -f1)
click() { keys -l $'\e[<0;40;'"$1"'M\e[<0;40;'"$1"'m'; }
click "$row"
wait_for "rows 2/2"
click "$row"
# On a loaded machine the terminal's report of the click has been seen lost
# once in many runs (the table stayed, the selection on the row clicked); a
# program that did not open the selection on a click would fail this both
# times, so the click is sent once more, and said so.
if ! on_screen_within 8 "TIMELINE"; then
	echo "note: the second click did not open the row within 8 s; clicked again" >&2
	click "$row"
fi
wait_for "order / GET:http://inventory-service/api/stock" "TIMELINE"
keys Escape
wait_for "ALERTS"
keys "m"
# Waited for as the screen is (a fixed 0.3 s failed once, with the fuzzers
# running beside it): the pane's flags change when the program's reply
# reaches the terminal.
mouse_off=no
for _ in $(seq 100); do
	if [ "$(mouse_flags)" = 00 ]; then
		mouse_off=yes
		break
	fi
	sleep 0.1
done
check "m turns the mouse off within 10 s (got $(mouse_flags))" test "$mouse_off" = yes
keys ":"
wait_for "JUMP  "
keys "memb"
wait_for ":memb"
keys Tab
wait_for ":GET:http://member-service/api/user/info" "JUMP  1 of"
keys Enter
wait_for "rows 1/2"
keys F1
wait_for "sentinel-top keys" "q/ctrl+c/F10"
keys F10
wait_for "EXIT=0"

# A target that refuses connections: the header counts it down and names
# it, the empty table says why, and the targets screen (t) says refused.
# Port 1 on loopback: nothing listens there.
run_pane "$bin --targets 127.0.0.1:1"
wait_for "targets 0/1 up" "✖ 1 down: 127.0.0.1:1" "no target is up, 1 down: 127.0.0.1:1: refused"
keys "t"
wait_for "TARGETS  0/1 up · ✖ 1 down" "refused: nothing listens on 127.0.0.1:1 (connection refused)" "reconnect"
keys Escape
wait_gone "TARGETS  0/1 up"
keys "q"
wait_for "EXIT=0"

# A replay of nothing is refused before the dashboard starts: one line,
# exit 3.
printf 'not json\n' > "$work/garbage.ndjson"
run_pane "$bin --replay $work/garbage.ndjson"
wait_for "nothing replayable in $work/garbage.ndjson" "EXIT=3"

# SIGTERM ends the dashboard at once, its terminal restored.
run_pane "$bin --replay sawtooth-db-slow --speed 8"
wait_for "CRIT sawtooth"
pid=$(pgrep -f "^$bin --replay sawtooth-db-slow --speed 8" | head -1)
kill -TERM "$pid"
wait_for "EXIT=0"

# Without colour nothing but text reaches the terminal.
run_pane "NO_COLOR=1 $bin --replay sawtooth-db-slow --speed 8"
wait_for "CRIT sawtooth"
check "NO_COLOR leaves no colour" bash -c \
	"! tmux -L $sock capture-pane -e -p -t e2e | grep -qE $'\x1b\\\\[[0-9;]*(3[0-7]|4[0-7]|38|48|9[0-7])[;m]'"
keys "q"
wait_for "EXIT=0"

# With colour some reaches it (CI=... in the environment makes terminal
# libraries assume no colour, so the pane runs without it).
run_pane "env -u CI -u NO_COLOR $bin --replay sawtooth-db-slow --speed 8"
wait_for "CRIT sawtooth"
check "colour without NO_COLOR" bash -c \
	"tmux -L $sock capture-pane -e -p -t e2e | grep -qE $'\x1b\\\\['"
keys "q"
wait_for "EXIT=0"

# Without a terminal it says so and points to the report.
out=$("$bin" --replay sawtooth-db-slow 2>&1 >/dev/null </dev/null)
code=$?
check "no terminal exits 2 (got $code)" test "$code" = 2
check "no terminal points to the report" grep -qF "sentinel-top report" <<<"$out"

echo "$passed passed, $failed failed"
[ "$failed" = 0 ]
