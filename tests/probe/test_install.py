"""test_install.py - `pip install ./src/probe` as a user does it: into a
virtualenv made with --system-site-packages (to see the system's torch),
with no package index at all (PIP_NO_INDEX), then the installed package
imports, says the version written in normscope_probe/version.py, and
writes a stream."""
import os
import re
import subprocess
import sys

import check

C = check.Check("probe install")
TMP = C.tmpdir()
SRC = os.path.join(check.HERE, "..", "..", "src", "probe")
venv = os.path.join(TMP, "venv")
r = subprocess.run([sys.executable, "-m", "venv", "--system-site-packages", venv],
                   capture_output=True, text=True, timeout=120)
C.ok(r.returncode == 0, "venv made (%s)" % r.stderr[-300:])
py = os.path.join(venv, "bin", "python")
env = dict(os.environ, PIP_NO_INDEX="1", PIP_DISABLE_PIP_VERSION_CHECK="1")
env.pop("PYTHONPATH", None)
r = subprocess.run([py, "-m", "pip", "install", SRC], capture_output=True, text=True, env=env,
                   timeout=300, cwd=TMP)
C.ok(r.returncode == 0, "pip install ./src/probe with no index (%s)" % (r.stdout + r.stderr)[-600:])
with open(os.path.join(SRC, "normscope_probe", "version.py")) as f:
    want = re.search(r'__version__ = "([^"]+)"', f.read()).group(1)
code = ("import torch, normscope_probe as n; m = torch.nn.Sequential(torch.nn.ModuleList("
        "[torch.nn.Linear(4, 4), torch.nn.Linear(4, 4)])); p = n.attach(m, path=%r); "
        "x = m[0][1](m[0][0](torch.randn(2, 4))); x.sum().backward(); p.step(0.0); p.close(); "
        "print(n.__version__, n.__file__)" % os.path.join(TMP, "i.nsj"))
r = subprocess.run([py, "-c", code], capture_output=True, text=True, env=env, timeout=120,
                   cwd=TMP)
out = r.stdout.split()
C.ok(r.returncode == 0 and out[:1] == [want] and venv in (out[1] if len(out) > 1 else ""),
     "the installed probe imports from the venv, version %s (%s%s)" % (want, r.stdout, r.stderr[-300:]))
head, rows, _ = check.read_stream(os.path.join(TMP, "i.nsj"))
C.ok(head.get("probe") == want and len(rows) == 1, "and writes a stream with its version")
# a Python that cannot import torch (no site-packages: -S; and the first
# python3 on PATH when it has none, as a pyenv one): a script run as a
# program that imports the probe says so in one line, no traceback, and
# exits non-zero; a library that catches the ImportError gets that line
import shutil  # noqa: E402

pys = [[sys.executable, "-I", "-S"]]
other = shutil.which("python3", path=os.environ.get("PATH", ""))
if other and os.path.realpath(other) != os.path.realpath(sys.executable) and subprocess.run(
        [other, "-c", "import torch"], capture_output=True, timeout=120).returncode != 0:
    pys.append([other])
C.ok(len(pys) >= 1, "a Python without torch to run")
script = os.path.join(TMP, "train.py")
with open(script, "w") as f:
    f.write("import sys\nsys.path.insert(0, %r)\nimport normscope_probe\n" % SRC)
for cmd in pys:
    r = subprocess.run(cmd + [script], capture_output=True, text=True, timeout=60, cwd=TMP)
    lines = r.stderr.strip().splitlines()
    C.ok(r.returncode != 0 and len(lines) == 1 and
         lines[0].startswith("normscope_probe needs torch, which ") and
         "/usr/bin/python3 -m venv" in lines[0],
         "%s: without torch, a script importing the probe says one line and exits non-zero "
         "(exit %d: %s)" % (cmd[0], r.returncode, r.stderr.strip()[-400:]))
    r = subprocess.run(cmd + ["-c", "import sys; sys.path.insert(0, %r)\ntry:\n    import "
                              "normscope_probe\nexcept ImportError as e:\n    print(e)" % SRC],
                       capture_output=True, text=True, timeout=60, cwd=TMP)
    C.ok(r.returncode == 0 and r.stdout.startswith("normscope_probe needs torch, which ") and
         len(r.stdout.strip().splitlines()) == 1,
         "%s: a library import gets an ImportError whose message is that line (%s%s)"
         % (cmd[0], r.stdout, r.stderr[-300:]))
C.close()
