# fuzz repro (optimize): crash [optimize:SelfOverlapError], seed 300, program 75; found by bench/fuzz.py
# python bench/fuzz.py --mode optimize ... reduced it; eager vs satfuse:
#   optimize raised SelfOverlapError: aten.zero_.default: unsupported operation: more than one element of the writ
#   ten-to tensor refers to a single memory location. Please clone() the tensor before performing the operation. [
#   functional.py:180]
# the program only: `python bench/repros/run.py capture-fuzz-write-into-expanded-input-selfoverlap.py` runs it (fuzz.py's helpers and runner)


def f(a, b):
    b.unfold(-1, 2, 2).zero_()
    return (a,)


def inputs(D0=2, v=0):
    a = mk((D0, 1), torch.float32, 483 + v, kind="plain")
    b = mk((1,), torch.float64, 484 + v).expand(D0,)
    return [a, b]


SIZES_A = {'D0': 2}
SIZES_B = {'D0': 0}
