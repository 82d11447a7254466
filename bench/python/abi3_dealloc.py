"""The abi3 measurement of ARCHITECTURE.md ("abi3"): what the codec's own deallocator is worth on path_t.

    python abi3_dealloc.py DIR     # DIR: generated Python (nerve-bench's $OUT_DIR/nerve_py or nerve_py_list)

The limited API has no `tp_dealloc` to replace, so a limited-API codec frees decoded instances with CPython's
`subtype_dealloc`. This decodes a path_t of 50 waypoints (the marshalling bench's shape) with the codec's deallocator
installed, then with CPython's put back on the two classes (the `tp_dealloc` slot copied from a plain slotted class
through ctypes; an experiment only), alternating seven times, and prints the best time of each. Not part of CI.
"""

import ctypes
import sys
import timeit

if len(sys.argv) != 2:
    raise SystemExit(__doc__)
sys.path.insert(0, sys.argv[1])
from seed import path_t, waypoint_t
m = path_t()
m.timestamp = 1
m.num_waypoints = 50
ws = []
for i in range(50):
    w = waypoint_t()
    w.id = f"wp{i}"
    w.position = [float(i), float(i) + 0.5]
    ws.append(w)
m.waypoints = ws
b = m.encode()
path_t.decode(b)  # compiles the plans (installs the codec's deallocator where it applies)
OFF = 6 * ctypes.sizeof(ctypes.c_void_p)  # tp_dealloc: after ob_refcnt, ob_type, ob_size, tp_name, tp_basicsize, tp_itemsize


def slot(cls):
    return ctypes.c_void_p.from_address(id(cls) + OFF)


class Plain:
    __slots__ = ("a",)


subtype = slot(Plain).value
classes = (waypoint_t, path_t)
codec = [slot(c).value for c in classes]
print("codec deallocator installed:", [v != subtype for v in codec])


def timed():
    return min(timeit.repeat(lambda: path_t.decode(b), number=2000, repeat=3)) / 2000 * 1e6


res = {"codec": [], "cpython": []}
for _ in range(7):
    for c, v in zip(classes, codec):
        slot(c).value = v
    res["codec"].append(timed())
    for c in classes:
        slot(c).value = subtype
    res["cpython"].append(timed())
for c, v in zip(classes, codec):
    slot(c).value = v
print({k: f"{min(v):.2f} us" for k, v in res.items()})
