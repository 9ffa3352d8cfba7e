#!/usr/bin/env python3
"""run_readme.py SOURCE_DIR BUILD_DIR: runs README.md's examples as printed.

A newcomer reads README.md top to bottom and types its examples in order on a
fresh clone, with `make run` going in another terminal. This test does the
same, and fails if any example fails.

What it runs, in the README's order, as one bash script with `set -e` (so the
first command that fails ends it, and the test names the block it was in):

  - every fenced block whose info string is `sh` or `bash`;
  - a fenced block preceded by `<!-- readme-test: file NAME -->` (on the line
    before its opening fence) is not run: its text is written to NAME in the
    working directory at that point, for a later shell block to use
    (`python3 client.py`, `cc ... hello.c`);
  - a fenced block preceded by `<!-- readme-test: skip (WHY) -->` is not run.
    Keep these few: only what a test cannot do as printed (`make run` itself,
    `make test`, `make install` into /usr/local).

Any other fenced block (output shown as text, YAML, ...) is read, not run; a
`c` or `python` block without a marker is an error, so that no program the
README prints goes untested by mistake.

Where: a temporary directory laid out like a clone that ran `make run`:
`build` is a link to BUILD_DIR (the real build), `include` and `examples` are
links into SOURCE_DIR, and `data/` is new, so the developer's own `data/` is
never touched. The daemon is started there exactly as the Makefile's `run`
target starts it (its recipe is read from the Makefile, with the defaults of
BUILD and LISTEN), on 127.0.0.1:8080 as printed: ctest runs this test with a
RESOURCE_LOCK on that port. It is stopped with SIGTERM at the end and must
exit 0.
"""
import os
import re
import shlex
import signal
import subprocess
import sys
import tempfile
import time

RUN_LANGS = {"sh", "bash"}
FILE_LANGS = {"c", "python"}  # must be marked: written to a file, or skipped
MARKER = re.compile(r"<!--\s*readme-test:\s*(skip|file)\b\s*(.*?)\s*-->")
FENCE = re.compile(r"^(`{3,})\s*([A-Za-z0-9_+-]*)\s*$")


def fail(message):
    print(f"run_readme: FAIL: {message}", file=sys.stderr)
    sys.exit(1)


def blocks(readme_path):
    """Yields (line, lang, marker, argument, text) for each fenced block."""
    lines = open(readme_path, encoding="utf-8").read().split("\n")
    i = 0
    while i < len(lines):
        match = FENCE.match(lines[i])
        if not match:
            i += 1
            continue
        fence, lang, start = match.group(1), match.group(2).lower(), i + 1
        previous = lines[i - 1].strip() if i > 0 else ""
        marker = MARKER.fullmatch(previous)
        j = i + 1
        while j < len(lines) and lines[j].strip() != fence:
            j += 1
        if j == len(lines):
            fail(f"README.md:{start}: a fenced block that never closes")
        yield start, lang, marker.group(1) if marker else None, marker.group(2) if marker else "", "\n".join(lines[i + 1:j])
        i = j + 1


def script_of(readme_path):
    """The bash script of the README's examples, and a count of what it holds."""
    parts = [
        "set -e",
        "README_LINE=0",
        "trap 'rc=$?; [ $rc -eq 0 ] || echo \"run_readme: the block at README.md line $README_LINE failed (exit $rc)\" >&2' EXIT",
    ]
    counts = {"run": 0, "file": 0, "skip": 0}
    for line, lang, marker, argument, text in blocks(readme_path):
        if marker == "skip":
            if not argument:
                fail(f"README.md:{line}: a skip marker must say why: <!-- readme-test: skip (WHY) -->")
            counts["skip"] += 1
            print(f"run_readme: README.md:{line}: skipped {argument}")
            continue
        if marker == "file":
            name = argument
            if not re.fullmatch(r"[A-Za-z0-9_.-]+", name):
                fail(f"README.md:{line}: file marker needs a plain file name, not {name!r}")
            delimiter = "README_TEST_EOF"
            if delimiter in text:
                fail(f"README.md:{line}: the block holds {delimiter}")
            parts += [f"README_LINE={line}", f"cat > {shlex.quote(name)} <<'{delimiter}'", text, delimiter]
            counts["file"] += 1
            continue
        if lang in RUN_LANGS:
            parts += [f"README_LINE={line}", f"echo '--- README.md:{line}'", text]
            counts["run"] += 1
        elif lang in FILE_LANGS:
            fail(f"README.md:{line}: a {lang} block with no readme-test marker: mark it "
                 "<!-- readme-test: file NAME --> (and run it from a shell block) or skip it")
    return "\n".join(parts) + "\n", counts


def run_recipe(makefile_path):
    """The Makefile's `run` recipe, with BUILD and LISTEN at their defaults."""
    text = open(makefile_path, encoding="utf-8").read()
    defaults = dict(re.findall(r"^(BUILD|LISTEN) \?= *(\S+)", text, re.M))
    match = re.search(r"^run:[^\n]*\n((?:\t[^\n]*\n)+)", text, re.M)
    if not match or set(defaults) != {"BUILD", "LISTEN"}:
        fail("cannot read the run target, BUILD or LISTEN from the Makefile")
    recipe = [line[1:] for line in match.group(1).splitlines()]
    for name, value in defaults.items():
        recipe = [line.replace(f"$({name})", value) for line in recipe]
    if any("$(" in line for line in recipe):
        fail(f"the run recipe uses a variable this test does not know: {recipe}")
    return recipe, defaults["LISTEN"]


def main():
    if len(sys.argv) != 3:
        fail("usage: run_readme.py SOURCE_DIR BUILD_DIR")
    source, build = (os.path.abspath(p) for p in sys.argv[1:])
    script, counts = script_of(os.path.join(source, "README.md"))
    recipe, listen = run_recipe(os.path.join(source, "Makefile"))
    print(f"run_readme: {counts['run']} shell blocks to run, {counts['file']} files, {counts['skip']} skipped")

    with tempfile.TemporaryDirectory(prefix="run_readme.") as work:
        os.symlink(build, os.path.join(work, "build"))
        for name in ("include", "examples"):
            os.symlink(os.path.join(source, name), os.path.join(work, name))
        # Everything but the last line prepares (mkdir data, seed limits.json);
        # the last starts the daemon, which make run leaves in the foreground.
        for line in recipe[:-1]:
            subprocess.run(["bash", "-c", line], cwd=work, check=True)
        daemon_err = open(os.path.join(work, "daemon.err"), "w+")
        daemon = subprocess.Popen(["bash", "-c", "exec " + recipe[-1]], cwd=work,
                                  stdout=subprocess.DEVNULL, stderr=daemon_err)
        try:
            deadline = time.monotonic() + 30
            while True:
                daemon_err.seek(0)
                said = daemon_err.read()
                if f"listening on {listen}" in said:
                    break
                if daemon.poll() is not None or time.monotonic() > deadline:
                    fail(f"the daemon of `make run` did not start (port {listen} taken?):\n{said}")
                time.sleep(0.05)
            env = dict(os.environ, LC_ALL="C.UTF-8")
            result = subprocess.run(["bash", "-c", script], cwd=work, env=env)
            if result.returncode != 0:
                daemon_err.seek(0)
                fail(f"a README example failed (exit {result.returncode}); the daemon said:\n{daemon_err.read()}")
        finally:
            if daemon.poll() is None:
                daemon.send_signal(signal.SIGTERM)
                try:
                    daemon.wait(timeout=30)
                except subprocess.TimeoutExpired:
                    daemon.kill()
                    daemon.wait()
                    fail("the daemon did not stop within 30 s of SIGTERM")
        if daemon.returncode != 0:
            daemon_err.seek(0)
            fail(f"the daemon exited {daemon.returncode} at SIGTERM:\n{daemon_err.read()}")
    print("run_readme: ok")


if __name__ == "__main__":
    main()
