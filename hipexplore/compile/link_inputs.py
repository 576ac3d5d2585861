"""What the host compiler driver hands to its programs, read from its ``-###`` plan: the file
operands a compile reads besides its sources (issue 25, item 4: an object file passed as an
option was linked but not keyed). Every existing file argument of cc1/as/ld outside the build
folder is an input; each ``-l`` library is found as ld finds it (the driver's ``-L`` folders, then
ld's own ``SEARCH_DIR``s; ``.so`` before ``.a`` unless static), and a linker script's
GROUP/INPUT/AS_NEEDED names are followed. A script that includes others or moves the search
(``INCLUDE``/``SEARCH_DIR``) cannot be followed: the compile is then not cached.
"""

from __future__ import annotations

import os
import re
import shlex
import shutil
import subprocess


def stable_line(line: str) -> str:
    """A plan line without the driver's random temp names (``/tmp/ccAbC123.s``)."""
    return re.sub(r"/(?:cc|tmp)[A-Za-z0-9]{6}\.(\w+)\b", r"/TEMP.\1", line)


def commands(plan: str) -> list[list[str]]:
    """The commands a driver's ``-###`` prints (one per line, a space first, arguments quoted)."""
    out = []
    for line in plan.splitlines():
        if line.startswith(" ") and line.strip() and not line.lstrip().startswith(("(", "#")):
            try:
                out.append(shlex.split(line))
            except ValueError:
                continue
    return out


_ld_dirs: dict[tuple, list[str]] = {}


def _linker_search_dirs(ld: str) -> list[str]:
    """ld's built-in ``SEARCH_DIR``s (after the driver's -L folders), memoized per ld file."""
    try:
        st = os.stat(ld)
    except OSError:
        return []
    key = (ld, st.st_size, st.st_mtime_ns, st.st_ino)
    if key not in _ld_dirs:
        try:
            proc = subprocess.run([ld, "--verbose"], capture_output=True, text=True, timeout=60)
            found = re.findall(r'SEARCH_DIR\("=?([^"]+)"\)', proc.stdout)
        except (OSError, subprocess.SubprocessError):
            found = []
        _ld_dirs[key] = found
    return _ld_dirs[key]


_SCRIPT_WORD = re.compile(
    r"\b(INCLUDE|SEARCH_DIR|STARTUP|INPUT|GROUP|AS_NEEDED|OUTPUT_FORMAT|OUTPUT_ARCH|OUTPUT|TARGET|SECTIONS|MEMORY|ENTRY)\b"
)


def driver_inputs(plan: str, tmp: str, inside: tuple[str, ...], argv: list[str]) -> tuple[list[str], list[str], str]:
    """From the driver's ``-###`` plan: the files its programs would read that the key must hold
    (every existing file argument outside the build folder; each ``-l`` library as the linker
    finds it, through the driver's ``-L`` folders and ld's own; the files a linker script names),
    the paths to watch (where a same-named library in an earlier folder would win), and an error
    text for what cannot be followed (a linker script that includes others or moves the search)."""
    files: list[str] = []
    watch: list[str] = []
    for cmd in commands(plan):
        if not cmd:
            continue
        prog = os.path.basename(cmd[0])
        linking = prog in ("collect2", "ld", "ld.bfd", "ld.gold", "ld.lld", "lld") or prog.startswith("ld.")
        dirs = [a[2:] for a in cmd if a.startswith("-L") and len(a) > 2]
        dirs += [b for a, b in zip(cmd, cmd[1:]) if a == "-L"]
        if linking:
            ld = next((c[0] for c in commands(plan) if os.path.basename(c[0]).startswith("ld")), "")
            if not ld:
                ld = shutil.which("ld") or ""
            dirs += _linker_search_dirs(ld) if ld else []
        static = False
        todo = list(cmd[1:])
        while todo:
            arg = todo.pop(0)
            if arg in ("-Bstatic", "-static", "-dn", "-non_shared"):
                static = True
                continue
            if arg in ("-Bdynamic", "-dy", "-call_shared"):
                static = False
                continue
            name = ""
            if linking and arg == "-l" and todo:
                name = todo.pop(0)
            elif linking and arg.startswith("-l") and len(arg) > 2:
                name = arg[2:]
            if name:
                names = (
                    [name[1:]]
                    if name.startswith(":")
                    else ([f"lib{name}.a"] if static else [f"lib{name}.so", f"lib{name}.a"])
                )
                hit = ""
                for d in dirs:
                    for n in names:
                        cand = os.path.normpath(os.path.join(tmp, d, n))
                        if os.path.isfile(cand):
                            hit = cand
                            break
                        watch.append(cand)
                    if hit:
                        break
                if hit:
                    todo[:0] = _script_operands(hit, files) if _is_script(hit) else []
                    files.append(hit)
                continue
            if arg.startswith("-"):
                continue
            path = os.path.normpath(os.path.join(tmp, arg))
            if path.startswith(inside) or not os.path.isfile(path):
                continue
            if linking and _is_script(path):
                text = _read_script(path)
                if re.search(r"\b(INCLUDE|SEARCH_DIR)\b", text):
                    return (
                        [],
                        [],
                        (
                            f"{arg!r} is a linker script that includes other scripts or changes the library "
                            f"search (INCLUDE/SEARCH_DIR): the files it reads cannot be listed, so it is not cached"
                        ),
                    )
                todo[:0] = _script_operands(path, files)
            files.append(path)
    return list(dict.fromkeys(files)), list(dict.fromkeys(watch)), ""


def _is_script(path: str) -> bool:
    try:
        with open(path, "rb") as f:
            head = f.read(8)
    except OSError:
        return False
    return not head.startswith((b"\x7fELF", b"!<arch>", b"!<thin>")) and bool(_SCRIPT_WORD.search(_read_script(path)))


def _read_script(path: str) -> str:
    try:
        with open(path, encoding="utf-8", errors="replace") as f:
            return re.sub(r"/\*.*?\*/", " ", f.read(1 << 20), flags=re.S)
    except OSError:
        return ""


def _script_operands(path: str, files: list[str]) -> list[str]:
    """The inputs a GROUP/INPUT/AS_NEEDED linker script names (paths, -l names), as arguments."""
    text = _read_script(path)
    out = []
    for m in re.finditer(r"\b(?:INPUT|GROUP|AS_NEEDED)\s*\(([^()]*(?:\([^()]*\)[^()]*)*)\)", text):
        for word in re.split(r"[\s,()]+", m.group(1)):
            if word and word != "AS_NEEDED":
                out.append(word if word.startswith(("-l", "/")) else f"-l:{word}")
    return out
