# fuzz repro (jit): wrong [exception-type], seed 9902, program 5967; found by bench/fuzz.py
# Not fixed (fuzzfix, 2026-11-26): eager's error for an out-of-range index_fill_ on an EMPTY tensor depends on
# the tensor's storage: a fresh empty tensor (0-byte storage) raises RuntimeError "setStorage: ... out of bounds
# for storage of size 0"; an empty view of a 1-element storage (here b = a_base[:-1], and b.to(float32) is b
# itself) raises IndexError "index 0 is out of bounds". The plan runs index_fill on its own (fresh) value of t3,
# so it raises the RuntimeError where eager raises IndexError. Inputs stay untouched. A fix needs the index
# bound check of index_fill_ as a plan data check (IndexError) only where eager's operand has storage.
def f(a, b, i2):
    t3 = b.to(torch.float32)
    t3.index_fill_(0, i2, True)
    return (t3,)


def inputs(D0=0, v=0):
    a_base = mk((D0 + 1,), torch.float32, 605 + v, kind="plain")
    a = a_base[1:]
    b = a_base[:-1]
    i2 = ix((4,), 5, 606 + v, dim=0)
    return [a, b, i2]


SIZES_A = {'D0': 0}
SIZES_B = {'D0': 0}
