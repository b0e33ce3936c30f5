#!/usr/bin/env python3
"""The written rules of docs/architecture.md ("Rules the lint checks"), checked on Sources/.

Run by `make lint` (so by `make test`); `lint-rules.py [ROOT]` checks another tree (the test of
this script). Fails, naming the file and line, on:

- a Swift file over 400 lines (the test kits aside: Sources/*TestKit/);
- a run-time capability cast (`as? any JobStore`, `as? any WebhookOutbox`, ...): ask for the
  capability in the type (`JobDatabase`);
- an `@unchecked Sendable` type that scripts/unchecked-sendable.txt does not list with the
  invariant that makes it safe (and a listed one that no longer exists), and more of them than
  the file's `# budget: N` (the budget only shrinks);
- a kind's stored options read by key (`presetSettings[`), or a job's kind compared with one of
  the registry's kinds (`kind == .export`), outside the kinds' own files
  (Sources/JobKinds/Kinds/): a job's place in a graph is its role, and what a kind means is the
  kind's (issue 43).

It warns, without failing, on a type spread over more than 600 lines of declaration and
extensions (split it into types that each do one thing).

Code lines over 120 columns are swift-format's rule (`lineLength` in .swift-format); it leaves
string literals and SQL alone, as this project wants.
"""
import pathlib
import re
import sys

ROOT = pathlib.Path(sys.argv[1]).resolve() if len(sys.argv) > 1 else pathlib.Path(__file__).resolve().parent.parent
MAX_LINES = 400
CAPABILITIES = (
    "JobDatabase|JobStore|JobQueueDriver|CancellableJobQueue|QueryableJobQueue|WorkerRegistry|"
    "JobStoreChangeNotifying|WebhookOutbox|APIKeyStore"
)
CAST = re.compile(r"\bas[?!]\s*any\s+(?:%s)\b" % CAPABILITIES)
KINDS = "export|hls|thumbnails|storyboard|waveform"
OPTION_KEY = re.compile(r"\bpresetSettings\s*\[")
KIND_COMPARISON = re.compile(r"\.kind\s*[!=]=\s*(?:\.(?:%s)\b|\"(?:%s)\")" % (KINDS, KINDS))
KIND_FILES = "Sources/JobKinds/Kinds/"
SPREAD = 600
TYPE_HEAD = re.compile(r"^(?:public |package |internal |fileprivate |private |final )*(?:extension|struct|class|enum|actor|protocol)\s+([A-Za-z_][A-Za-z0-9_.]*)")
UNCHECKED = re.compile(r"\b(?:class|struct|enum|actor|extension)\s+([A-Za-z_][A-Za-z0-9_.]*)[^{]*@unchecked\s+Sendable")

problems = []
sources = sorted(p for p in (ROOT / "Sources").rglob("*.swift") if "TestKit" not in p.parts[-2])
found_unchecked = set()
type_lines = {}
for path in sources:
    relative = path.relative_to(ROOT).as_posix()
    text = path.read_text(encoding="utf-8")
    lines = text.splitlines()
    if len(lines) > MAX_LINES:
        problems.append(f"{relative}: {len(lines)} lines, over {MAX_LINES}: split it by what its parts do")
    for number, line in enumerate(lines, 1):
        if CAST.search(line):
            problems.append(f"{relative}:{number}: a capability cast; ask for it in the type (JobDatabase)")
        code = line.split("//", 1)[0]
        if not relative.startswith(KIND_FILES) and OPTION_KEY.search(code):
            problems.append(f"{relative}:{number}: a kind's options read by key; that is the kind's (Kinds/), or the job's role")
        if not relative.startswith(KIND_FILES) and KIND_COMPARISON.search(code):
            problems.append(f"{relative}:{number}: a job's kind compared with one kind; ask the kind (JobKinds.named)")
    # Each top-level declaration or extension, from its head to the closing brace in column 0.
    start = None
    for number, line in enumerate(lines, 1):
        head = TYPE_HEAD.match(line)
        if head and start is None:
            start, name = number, head.group(1)
        if start is not None and line.startswith("}"):
            type_lines[name] = type_lines.get(name, 0) + number - start + 1
            start = None
    # Declarations may wrap: join each declaration's head up to its brace.
    for match in UNCHECKED.finditer(re.sub(r"\s*\n\s*", " ", text)):
        found_unchecked.add(f"{relative} {match.group(1)}")

allowed = {}
listing = ROOT / "scripts" / "unchecked-sendable.txt"
for number, line in enumerate(listing.read_text(encoding="utf-8").splitlines(), 1):
    if not line.strip() or line.startswith("#"):
        continue
    head, _, invariant = line.partition(" -- ")
    if not invariant.strip():
        problems.append(f"{listing.name}:{number}: '{head.strip()}' says no invariant (PATH TYPE -- why it is safe)")
    allowed[head.strip()] = invariant.strip()
budget = next(
    (int(line.split(":", 1)[1]) for line in listing.read_text(encoding="utf-8").splitlines() if line.startswith("# budget:")),
    None,
)
if budget is None:
    problems.append(f"{listing.name}: no '# budget: N' line (the most @unchecked Sendable types allowed)")
elif len(found_unchecked) > budget:
    problems.append(
        f"{len(found_unchecked)} @unchecked Sendable types, over the budget of {budget} in {listing.name}: "
        "make the new one Sendable by construction (a Mutex, an actor, immutable state)"
    )
for entry in sorted(found_unchecked - set(allowed)):
    problems.append(f"{entry}: @unchecked Sendable not in scripts/unchecked-sendable.txt (add it with its invariant)")
for entry in sorted(set(allowed) - found_unchecked):
    problems.append(f"scripts/unchecked-sendable.txt: '{entry}' is listed but no longer declared: remove the line")

for name, count in sorted(type_lines.items()):
    if count > SPREAD:
        print(f"lint: warning: {name} spreads over {count} lines of declaration and extensions (over {SPREAD})", file=sys.stderr)
for problem in problems:
    print(f"lint: {problem}", file=sys.stderr)
if problems:
    sys.exit(1)
print(f"lint rules: ok ({len(sources)} files; {len(found_unchecked)} @unchecked Sendable types, each with its invariant)")
