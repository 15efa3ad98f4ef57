# fuzz repro (jit): wrong [input-values], seed 10092, program 1922; open: eager's f16 NaN bits
# A bitcast write: the int64 input read as float16 and doubled in place. Its f16 lanes that are NaN
# keep their bits in eager's mul (0xffff * 2 is 0xffff); the plan's segment computes f16 arithmetic
# in float32 (one rounding, as eager's kernel does), and torch's own f16 -> f32 cast loses a NaN's
# sign on its scalar tail path (the last n % 16 elements): 0xffff becomes 0x7fffffff, then 0x7fff.
# Values are NaN either way; only a bitcast shows the bits. Same class as the layout-dependent repros.
#   torch.full((4,), -1, dtype=torch.int16).view(torch.float16).float().view(torch.int32)  -> 0x7fffffff
#   torch.full((20,), -1, dtype=torch.int16).view(torch.float16).float().view(torch.int32)[0]  -> 0xffffe000
# python bench/fuzz.py --mode jit ... reduced it; eager vs satfuse:
#   input-values: values: call 2, sizes {'D0': 1, 'D1': 5}: input 0 after the call: Tensor-likes are not equal! Mi
#   smatched elements: 1 / 5 (20.0%) Greatest absolute difference: 9223231297218904067 at index (4, 0) Greatest re
#   lative difference: 2.305807824841605e+18 at index (4, 0); plan [2, -3, 10, -2, 9223231297218904063] eager [2,

def f(c, d):
    t1 = torch.full((d.numel(), 2), 3, device=d.device)
    t2 = c.view(torch.int32)
    t2.view(torch.float16).mul_(2)
    return (t1,)


def inputs(D0=0, D1=0, v=0):
    c_base = mk((D1 + 1, D0), torch.int64, 422 + v, kind="plain")
    c = c_base[1:]
    d = mk((0, 0, 0), torch.float32, 423 + v)
    return [c, d]


SIZES_A = {'D0': 0, 'D1': 0}
SIZES_B = {'D0': 1, 'D1': 5}
