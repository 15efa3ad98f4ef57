"""Trace <-> text. The text is valid Python in the style of a Thunder trace: one
defining line per node with its type in a trailing comment, write-backs as
``writeback(buffer, value)`` statements, and the inputs' types as annotations.
It is how plans are shown, golden-tested and written by hand in tests.
"""

from __future__ import annotations

import ast
import io
import math
import re
import tokenize
from typing import Any

import sympy
import torch

from .ir import DTYPES, Extent, IRError, Node, ScalarType, TensorType, Trace, Type, Var, as_extent
from .vocab import OPS, infer, is_opaque, resolve_opaque


def fmt_literal(a: Any) -> str | None:
    """Python source for a float / dtype / device / layout literal (None if ``a`` is none of those)."""
    if isinstance(a, float):
        if math.isnan(a):
            return "float('nan')"
        if math.isinf(a):
            return "float('inf')" if a > 0 else "float('-inf')"
        return repr(a)
    if isinstance(a, torch.dtype):
        return str(a)
    if isinstance(a, torch.device):
        return f"torch.device({str(a)!r})"
    if isinstance(a, (torch.layout, torch.memory_format)):
        return str(a)
    return None


def fmt_value(a: Any) -> str:
    if isinstance(a, Var):
        return a.name
    if isinstance(a, (tuple, list)):
        inner = ", ".join(fmt_value(x) for x in a)
        return f"({inner},)" if len(a) == 1 else f"({inner})"
    if isinstance(a, sympy.Basic):
        return sympy.sstr(a)
    if isinstance(a, bool) or a is None:
        return repr(a)
    if isinstance(a, torch.Tensor):  # a constant of the program (capture's ``literal``)
        if a.numel() <= 16:
            return f"torch.tensor({a.tolist()!r}, dtype={a.dtype})"
        return f"<{a.dtype} constant of shape {list(a.shape)}>"
    lit = fmt_literal(a)
    return lit if lit is not None else repr(a)


def fmt_call(op: str, args: tuple, kwargs: dict) -> str:
    spec = OPS.get(op)
    pos = list(args)
    kws: list[tuple[str, Any]] = []
    if spec is not None and spec.kw:
        n = len(spec.kw)
        kws = list(zip(spec.kw, pos[-n:]))
        pos = pos[:-n]
    parts = [fmt_value(a) for a in pos] + [f"{k}={fmt_value(v)}" for k, v in kws]
    parts += [f"{k}={fmt_value(v)}" for k, v in kwargs.items()]
    return f"{op}({', '.join(parts)})"


def fmt_type(t: Type) -> str:
    return str(t)


def print_node(n: Node) -> str:
    lhs = n.outs[0].name if len(n.outs) == 1 else "(" + ", ".join(o.name for o in n.outs) + ("," if len(n.outs) == 1 else "") + ")"
    types = ", ".join(fmt_type(o.type) for o in n.outs)
    return f"{lhs} = {fmt_call(n.op, n.args, n.kwargs)}  # {types}"


def print_trace(tr: Trace, indent: str = "  ") -> str:
    lines = []
    if tr.provenance:
        lines.append(f"# {tr.provenance}")
    params = ", ".join(f'{v.name}: "{fmt_type(v.type)}"' for v in tr.inputs)
    lines.append(f"def {tr.name}({params}):")
    for i, (strides, offset) in sorted(tr.input_layouts.items()):
        lines.append(f"{indent}# {tr.inputs[i].name} has strides {fmt_value(tuple(strides))} and storage offset "
                     f"{fmt_value(offset)} (symbols the prologue binds from it)")
    last_site = None
    for n in tr.nodes:
        if n.site and n.site != last_site:
            lines.append(f"{indent}# {n.site}")
            last_site = n.site
        lines.append(indent + print_node(n))
    for buf, val in tr.writebacks:
        lines.append(f"{indent}writeback({buf.name}, {val.name})")
    for v in tr.effects:
        lines.append(f"{indent}effect({v.name})  # unused, computed for what eager raises")
    for i, method, margs in tr.restrides:
        lines.append(f"{indent}# {tr.inputs[i].name}.{method}({', '.join(map(repr, margs))}): replayed on the "
                     "caller's tensor at the end")
    lines.append(f"{indent}return {fmt_value(tuple(tr.outputs))}")
    return "\n".join(lines)


# ---------------------------------------------------------------- parsing

_TYPE = re.compile(r"^(?:(?P<dev>\S+) )?(?P<dt>[a-z0-9]+)\[(?P<shape>.*)\]$")


def parse_extent(text: str, symbols: dict[str, sympy.Symbol]) -> Extent:
    text = text.strip()
    if re.fullmatch(r"-?\d+", text):
        return int(text)
    for name in re.findall(r"[A-Za-z_]\w*", text):
        symbols.setdefault(name, sympy.Symbol(name, integer=True))
    return as_extent(sympy.sympify(text, locals=dict(symbols)))


def parse_type(text: str, symbols: dict[str, sympy.Symbol]) -> Type:
    text = text.strip()
    m = _TYPE.match(text)
    if m:
        if m.group("dt") not in DTYPES:
            raise IRError(f"unknown dtype {m.group('dt')!r} in {text!r} (known: {', '.join(DTYPES)})")
        inner = m.group("shape").strip()
        shape = tuple(parse_extent(e, symbols) for e in _split_top(inner)) if inner else ()
        return TensorType(m.group("dt"), shape, m.group("dev") or "cpu")
    kind, _, value = text.partition(" ")
    if kind in ("int", "float", "bool"):
        if not value:
            return ScalarType(kind)
        if kind == "int":
            return ScalarType(kind, parse_extent(value, symbols))
        return ScalarType(kind, ast.literal_eval(value))
    raise IRError(f"cannot parse type {text!r}")


def _split_top(s: str) -> list[str]:
    out, depth, cur = [], 0, ""
    for c in s:
        if c == "," and depth == 0:
            out.append(cur)
            cur = ""
            continue
        depth += c in "(["
        depth -= c in ")]"
        cur += c
    out.append(cur)
    return out


def parse_trace(text: str, opaque_types_required: bool = True) -> Trace:
    """Parse the printed form back into a Trace, validating it fully: every name defined before
    use, every op known (vocabulary ops have their types re-inferred and checked against the
    comments; ``aten.*`` fallbacks must resolve to a torch op and take their types from the
    comment), every write-back of the input's own type. Errors are ``IRError``s that start with
    ``line N:``."""
    comments: dict[int, str] = {}
    try:
        mod = ast.parse(text)  # first: Python's own syntax errors point at the right line
        for tok in tokenize.generate_tokens(io.StringIO(text).readline):
            if tok.type == tokenize.COMMENT:
                comments[tok.start[0]] = tok.string[1:].strip()
    except SyntaxError as e:
        raise IRError(f"line {e.lineno}: syntax error: {e.msg}") from None
    except tokenize.TokenError as e:
        raise IRError(f"line {e.args[1][0]}: syntax error: {e.args[0]}") from None
    fns = [s for s in mod.body if isinstance(s, ast.FunctionDef)]
    if len(fns) != 1:
        raise IRError("line 1: expected exactly one 'def' in the trace text")
    fn = fns[0]
    symbols: dict[str, sympy.Symbol] = {}
    env: dict[str, Var] = {}
    inputs = []

    def typ(t: str, line: int) -> Type:
        try:
            return parse_type(t, symbols)
        except IRError as e:
            raise IRError(f"line {line}: {e}") from None
        except (ValueError, SyntaxError, TypeError) as e:
            raise IRError(f"line {line}: cannot parse type {t!r}: {e}") from None

    for a in fn.args.args:
        if not isinstance(a.annotation, ast.Constant):
            raise IRError(f"line {a.lineno}: input {a.arg} needs a type annotation string")
        v = Var(a.arg, typ(a.annotation.value, a.lineno))
        env[a.arg] = v
        inputs.append(v)
    bound = set(symbols)  # extents may use the symbols the inputs bind, and nothing else
    tr = Trace(inputs, [], [], name=fn.name)
    first = text.lstrip().splitlines()[0] if text.strip() else ""
    if first.startswith("#"):
        tr.provenance = first[1:].strip()

    def undefined(name: str, line: int) -> IRError:
        return IRError(f"line {line}: name {name!r} is not defined (not an input, an earlier value, or a symbol "
                       f"an input's annotation binds)")

    def conv(node: ast.AST) -> Any:
        if isinstance(node, ast.Name):
            if node.id in env:
                return env[node.id]
            if node.id in ("True", "False", "None"):
                return {"True": True, "False": False, "None": None}[node.id]
            if node.id not in bound:
                raise undefined(node.id, node.lineno)
            return symbols[node.id]
        if isinstance(node, (ast.Tuple, ast.List)):
            return tuple(conv(e) for e in node.elts)
        src = ast.unparse(node)
        names = {n.id for n in ast.walk(node) if isinstance(n, ast.Name)} - {"float", "torch"}
        if names:
            for nm in names:
                if nm in env:
                    raise IRError(f"line {node.lineno}: tensor {nm} used inside an expression: {src}")
                if nm not in bound:
                    raise undefined(nm, node.lineno)
            return as_extent(sympy.sympify(src, locals=dict(symbols)))
        try:
            return eval(compile(ast.Expression(node), "<trace>", "eval"),
                        {"float": float, "torch": torch, "__builtins__": {}})
        except Exception as e:  # noqa: BLE001 - a literal we cannot read
            raise IRError(f"line {node.lineno}: cannot read {src!r}: {type(e).__name__}: {e}") from None

    for st in fn.body:
        if isinstance(st, ast.Return):
            val = conv(st.value) if st.value is not None else ()
            tr.outputs = list(val) if isinstance(val, tuple) else [val]
            continue
        if isinstance(st, ast.Expr) and isinstance(st.value, ast.Call) and ast.unparse(st.value.func) == "writeback":
            if len(st.value.args) != 2:
                raise IRError(f"line {st.lineno}: writeback takes (input, value)")
            buf, val = (conv(a) for a in st.value.args)
            if not (isinstance(buf, Var) and any(buf is v for v in inputs)):
                raise IRError(f"line {st.lineno}: writeback target {ast.unparse(st.value.args[0])} is not an input")
            if not isinstance(val, Var) or val.type != buf.type:
                got = val.type if isinstance(val, Var) else repr(val)
                raise IRError(f"line {st.lineno}: writeback({buf.name}, {ast.unparse(st.value.args[1])}): the value is "
                              f"{got} but {buf.name} is {buf.type}")
            tr.writebacks.append((buf, val))
            continue
        if isinstance(st, ast.Expr) and isinstance(st.value, ast.Call) and ast.unparse(st.value.func) == "effect":
            val = conv(st.value.args[0]) if len(st.value.args) == 1 else None
            if not isinstance(val, Var):
                raise IRError(f"line {st.lineno}: effect takes one value of the program")
            tr.effects.append(val)
            continue
        if not (isinstance(st, ast.Assign) and isinstance(st.value, ast.Call) and len(st.targets) == 1):
            raise IRError(f"line {st.lineno}: expected 'name = op(...)', got {ast.unparse(st)!r}")
        op = ast.unparse(st.value.func)
        if op not in OPS and not is_opaque(op):
            raise IRError(f"line {st.lineno}: unknown op {op!r}")
        args = tuple(conv(a) for a in st.value.args)
        kwargs = {k.arg: conv(k.value) for k in st.value.keywords}
        tgt = st.targets[0]
        names = [tgt.id] if isinstance(tgt, ast.Name) else [e.id for e in tgt.elts]
        comment = comments.get(st.lineno, "")
        ctypes = [typ(t, st.lineno) for t in _split_top(comment)] if comment else []
        if op in OPS:
            spec = OPS[op]
            args = args + tuple(kwargs.pop(k) for k in spec.kw if k in kwargs)
            if len(args) != len(spec.sig):
                raise IRError(f"line {st.lineno}: {op} takes {len(spec.sig)} arguments, got {len(args)}")
            dev = ctypes[0].device if ctypes and isinstance(ctypes[0], TensorType) else None
            try:
                t = infer(op, args, dev)
            except IRError as e:
                raise IRError(f"line {st.lineno}: {e}") from None
            if ctypes and (ctypes[0].dtype != t.dtype or len(ctypes[0].shape) != len(t.shape)):
                raise IRError(f"line {st.lineno}: {op} gives {t}, comment says {ctypes[0]}")
            outs = (Var(names[0], ctypes[0] if ctypes else t),)
        else:
            try:
                resolve_opaque(op)
            except Exception as e:  # noqa: BLE001 - resolve_opaque names the op
                raise IRError(f"line {st.lineno}: {e}") from None
            if len(ctypes) != len(names):
                raise IRError(f"line {st.lineno}: opaque op {op} needs a type comment for each output")
            outs = tuple(Var(nm, t) for nm, t in zip(names, ctypes))
        for o in outs:
            env[o.name] = o
        tr.nodes.append(Node(op, args, kwargs, outs))
    try:
        tr.lint()
    except IRError as e:
        raise IRError(f"line {fn.lineno}: {e}") from None
    return tr
