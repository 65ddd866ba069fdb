"""libwrapbake.so from Python through ctypes alone: parses a schema, makes
a tcc wrapper whose graph is a Python function, and calls it three times.

    python3 tests/shared/ctypes_test.py BUILD/lib/libwrapbake.so.N
"""
import ctypes as C
import sys


class DLDataType(C.Structure):
    _fields_ = [("code", C.c_uint8), ("bits", C.c_uint8),
                ("lanes", C.c_uint16)]


class DLDevice(C.Structure):
    _fields_ = [("device_type", C.c_int), ("device_id", C.c_int32)]


class Value(C.Union):
    """wb_value: an argument, a graph value, an output."""
    _fields_ = [("t", C.c_void_p), ("i", C.c_int64), ("f", C.c_double),
                ("b", C.c_bool), ("p", C.c_void_p)]


class Options(C.Structure):
    _fields_ = [("tier", C.c_int), ("flags", C.c_uint),
                ("promote_calls", C.c_uint64), ("promote_ms", C.c_uint32),
                ("cc_timeout_s", C.c_uint32), ("cc", C.c_char_p),
                ("stream", C.c_void_p)]


GRAPH = C.CFUNCTYPE(C.c_int, C.c_void_p, C.POINTER(Value), C.c_int,
                    C.POINTER(Value), C.c_int)
WB_TIER_TCC, F32, CPU = 2, DLDataType(2, 32, 1), DLDevice(1, 0)


def main(path):
    wb = C.CDLL(path)
    wb.wb_last_error.restype = C.c_char_p
    wb.wb_tensor_data.restype = C.c_void_p
    wb.wb_tensor_data.argtypes = [C.c_void_p]
    wb.wb_tensor_version.restype = C.c_uint64
    wb.wb_tensor_version.argtypes = [C.c_void_p]
    wb.wb_tensor_release.argtypes = [C.c_void_p]
    wb.wb_tensor_retain.restype = C.c_void_p
    wb.wb_tensor_retain.argtypes = [C.c_void_p]
    wb.wb_tensor_new.argtypes = [DLDataType, DLDevice, C.c_int,
                                 C.POINTER(C.c_int64), C.POINTER(C.c_void_p)]
    wb.wb_wrapper_free.argtypes = [C.c_void_p]
    wb.wb_spec_free.argtypes = [C.c_void_p]
    wb.wb_wrapper_new.argtypes = [C.c_void_p, GRAPH, C.c_void_p,
                                  C.POINTER(Options), C.POINTER(C.c_void_p)]
    wb.wb_call.argtypes = [C.c_void_p, C.POINTER(Value), C.c_int,
                           C.POINTER(Value), C.c_int]
    wb.wb_wrapper_tier.argtypes = [C.c_void_p]
    wb.wb_tier_name.restype = C.c_char_p
    wb.wb_tier_name.argtypes = [C.c_int]

    def check(status, what):
        if status != 0:
            raise SystemExit(f"{what}: {wb.wb_last_error().decode()}")

    n = (C.c_int64 * 1)(4)

    def floats(t):
        return C.cast(wb.wb_tensor_data(t), C.POINTER(C.c_float))

    def add_one(ctx, args, nargs, values, nvalues):
        """The graph: x + 1 as x's new value, then x itself."""
        y = C.c_void_p()
        if wb.wb_tensor_new(F32, CPU, 1, n, C.byref(y)) != 0:
            return -1
        x, out = floats(args[0].t), floats(y)
        for i in range(4):
            out[i] = x[i] + 1
        values[0].t = y
        values[1].t = y
        wb.wb_tensor_retain(y)
        return 2

    spec = C.c_void_p()
    check(wb.wb_spec_parse(b"add_one_(Tensor(a!) x) -> Tensor(a!) x",
                           C.byref(spec)), "wb_spec_parse")
    graph = GRAPH(add_one)
    w = C.c_void_p()
    opts = Options(tier=WB_TIER_TCC)
    check(wb.wb_wrapper_new(spec, graph, None, C.byref(opts), C.byref(w)),
          "wb_wrapper_new")
    x = C.c_void_p()
    check(wb.wb_tensor_new(F32, CPU, 1, n, C.byref(x)), "wb_tensor_new")
    args, outs = (Value * 1)(), (Value * 1)()
    args[0].t = x
    for _ in range(3):
        check(wb.wb_call(w, args, 1, outs, 1), "wb_call")
        assert outs[0].t == x.value, "the output is not x itself"
        wb.wb_tensor_release(outs[0].t)
    x0, version = floats(x)[0], wb.wb_tensor_version(x)
    tier = wb.wb_tier_name(wb.wb_wrapper_tier(w)).decode()
    wb.wb_tensor_release(x)
    wb.wb_wrapper_free(w)
    wb.wb_spec_free(spec)
    print(f"ctypes: x[0] = {x0:g} after 3 calls, version {version}, "
          f"served by {tier}")
    return 0 if (x0, version, tier) == (3.0, 3, "tcc") else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1]))
