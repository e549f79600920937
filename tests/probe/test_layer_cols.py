"""test_layer_cols.py - the probe's per-block columns (LAYER_COLS in
normscope_probe/stream.py) are the lab's table of them (metrics_layer_cols),
name by name and in order: read off the lab's own CSV header (the writer
walks the table), so neither side can add, drop or move a column alone.
A column the probe does not measure is listed in LAYER_UNKNOWN, never left
out: it is written nowhere and a reader shows it unknown. Needs no torch.
Usage: NS_BIN=./normscope python3 tests/probe/test_layer_cols.py"""
import os
import subprocess

import check

C = check.Check("probe layer columns")
NS = os.environ.get("NS_BIN", os.path.join(check.HERE, "..", "..", "normscope"))
S = check.stream_module()


def lab_layer_cols():
    """The lab's per-layer columns, from layer 0's names in its CSV header."""
    out = subprocess.run([NS, "--headless", "-q", "-L", "1", "-d", "16", "-H", "2", "-T", "8",
                          "-B", "2", "--steps", "1", "--csv", "-"],
                         capture_output=True, text=True, timeout=120, check=True).stdout
    header = out.splitlines()[0].split(",")
    return [h[3:] for h in header if h.startswith("l0_")]


lab = lab_layer_cols()
probe = list(S.LAYER_COLS)
C.ok(len(lab) >= 10, "the lab's CSV header has %d per-layer columns: %s" % (len(lab), lab))
for name in lab:
    C.ok(name in probe, "the lab's column l{i}_%s is not in the probe's LAYER_COLS "
         "(normscope_probe/stream.py): add it there, measured in probe.py's _layer_pairs' "
         "caller or listed in LAYER_UNKNOWN" % name)
for name in probe:
    C.ok(name in lab, "the probe's LAYER_COLS has l{i}_%s, which the lab's table "
         "(metrics_layer_cols) does not" % name)
C.ok(probe == lab, "the probe's columns are not in the lab's order:\n  lab:   %s\n  probe: %s"
     % (", ".join(lab), ", ".join(probe)))
for name in sorted(S.LAYER_UNKNOWN):
    C.ok(name in probe, "LAYER_UNKNOWN names %s, not a column of LAYER_COLS" % name)
C.ok(len(set(probe)) == len(probe), "LAYER_COLS names a column twice: %s" % probe)
C.close()
