"""One loader output's operations, planned for an epoch (FFCV's ffcv.pipeline.pipeline).

``plan_output`` walks the operations once, declaring each one's state as FFCV
does, and splits them into

- ``go_ops``: the decoder and the built-in operations right after it, which the
  loader's Go workers run per sample straight into batch memory;
- ``steps``: what runs after that, in order, on whole batches: a ``PyStage``
  (custom operation, torch module, ToDevice, tensor-layout op) or a ``GoTail``
  (built-in operations that follow a Python stage: the same Go code, run on
  the batch the stage produced).

Every built-in operation runs in Go wherever it sits, under the key it would
have without Python stages (its index among the pipeline's built-in
operations), so a Python stage inserted anywhere changes no random draw.
Layout-only markers (ToTensor, ToTorchImage, ToDevice('cpu')) are moved past
the built-in operations that follow them, which keeps those in one Go program.
"""
import gc

import numpy as np
import torch

from .._dtypes import numpy_dtype, torch_dtype
from .compiler import Compiler
from .state import State, initial_state

__all__ = ["Pipeline", "plan_output", "OutputPlan", "PyStage", "GoTail"]


class Pipeline:
    """FFCV's Pipeline: one field's operations with their states and memory,
    for code that drives operations by hand (after each operation's
    ``accept_field`` and ``accept_globals``, as FFCV's Loader calls them).
    The Loader does not use it: it plans its outputs with ``plan_output``
    and runs the built-in operations in Go.

    ``operation_blocks`` are ``(jit_mode, [operation index, ...])`` runs of
    operations in one mode; ``compiled_ops`` maps each index to its
    ``generate_code()`` (the built-in operations that only run in Go have
    none: None there).
    """

    def __init__(self, operations):
        self.original_state = initial_state()
        self.operations = list(operations)
        self.operation_blocks, _ = self.parse_pipeline()
        self.compiled_ops = self.compile_ops()
        self.compiled_code = None

    def parse_pipeline(self, batch_size=16):
        """(operation_blocks, {index: the AllocationQuery or queries of the
        operation, or None}), declaring each operation's state in turn."""
        blocks, allocations = [], {}
        state = self.original_state
        for index, op in enumerate(self.operations):
            previous = state
            state, allocations[index] = op.declare_state_and_memory(state)
            if blocks and blocks[-1][0] == state.jit_mode and state.jit_mode == previous.jit_mode:
                blocks[-1][1].append(index)
            else:
                blocks.append((state.jit_mode, [index]))
        return blocks, allocations

    def compile_ops(self):
        compiled = {}
        for index, op in enumerate(self.operations):
            try:
                compiled[index] = op.generate_code()
            except NotImplementedError:
                compiled[index] = None
        return compiled

    def allocate_query(self, memory_allocation, batch_size, batches_ahead):
        """batches_ahead buffers of batch_size samples for one query: a numpy
        array (numpy dtype) or a list of tensors (torch dtype)."""
        shape = (batches_ahead, batch_size, *memory_allocation.shape)
        if isinstance(memory_allocation.dtype, torch.dtype):
            device = memory_allocation.device or torch.device("cpu")
            return [torch.empty(*shape[1:], dtype=memory_allocation.dtype, device=device)
                    for _ in range(batches_ahead)]
        return np.empty(shape, dtype=np.dtype(memory_allocation.dtype))

    def allocate_memory(self, batch_size, batches_ahead):
        """{index: the operation's buffers (a tuple for several queries), or None}."""
        _, allocations = self.parse_pipeline()
        out = {}
        for index, q in allocations.items():
            if q is None:
                out[index] = None
            elif isinstance(q, (list, tuple)):
                out[index] = tuple(self.allocate_query(x, batch_size, batches_ahead) for x in q)
            else:
                out[index] = self.allocate_query(q, batch_size, batches_ahead)
        return out


class GoTail:
    """Built-in operations run by Go on a batch a Python stage produced."""

    def __init__(self, field, in_state, lead=0):
        self.field, self.in_state, self.ops = field, in_state, []
        self.lead = lead  # leading clip dims of in_state: Go lifts per-image ops over them
        self.handle = None  # set by the loader's build: ffcv_loader_tail
        self.out_shape = self.out_dtype = None

    def spec(self):
        st = self.in_state
        inp = {"shape": list(st.shape), "dtype": np.dtype(st.dtype).str}
        if self.lead:
            inp["lead"] = self.lead
        return {"field": self.field, "in": inp, "ops": self.ops}


class PyStage:
    """A stage run in Python on the batch: a built-in tensor op (its
    ``_apply``), a custom operation's compiled code, or a custom decoder
    reading its samples itself (decoder: (metadata column, file buffer))."""

    def __init__(self, op, state, index, decoder=None, compiled=None):
        self.op, self.index, self.decoder = op, index, decoder
        self.in_state = state
        self.jit_in = state.jit_mode
        if op._transform:
            self.kind = "builtin"
            self.state, self.query = op.declare_state_and_memory(state)[0], None
            self.code = None
        else:
            self.kind = "custom"
            self.keep_numpy = False  # set on a pipeline's last stage when it ends in jit mode, as FFCV
            self.state, self.query = op.declare_state_and_memory(state)
            self.shared_query = op.declare_shared_memory(state)
            self.init_shared = op.generate_code_for_shared_state()
            code = op.generate_code()
            self.with_indices = bool(getattr(code, "with_indices", False))
            if compiled is None:
                compiled = Compiler.compile(code)
            self.code = compiled

    @property
    def light(self):
        """A tensor-layout op (a view or cast): not worth a thread."""
        return self.op._light

    def run(self, x, ctx):
        if self.kind == "builtin":
            return self.op._apply(x, ctx)
        if self.decoder is not None:
            indices = ctx.indices.numpy()
            out = self._call(indices, self._alloc(self.query, len(indices), ctx.pin_memory), *self.decoder)
            return np.asarray(out) if self.keep_numpy else torch.from_numpy(np.asarray(out))
        inp = x.numpy() if self.jit_in and isinstance(x, torch.Tensor) else x
        dst = self._alloc(self.query, len(x), ctx.pin_memory)
        args = (inp, dst, ctx.indices.numpy()) if self.with_indices else (inp, dst)
        if self.shared_query is not None or self.init_shared is not None:
            shared = self._alloc(self.shared_query, len(x), ctx.pin_memory)
            if self.init_shared is not None:
                self.init_shared(shared)
            args += (shared,)
        out = self._call(*args)
        if self.keep_numpy:
            return np.asarray(out)
        if self.state.jit_mode or isinstance(out, np.ndarray):
            out = torch.from_numpy(np.asarray(out))
        return out

    def _call(self, *args):
        """Runs the custom code. numba compiles on a call with new argument
        types and leaves reference cycles behind that hold the frames it ran
        under, and through them the batch, this stage and the loader's build:
        those are collected right away rather than at the collector's next run."""
        signatures = getattr(self.code, "signatures", None)
        compiled = None if signatures is None else len(signatures)
        out = self.code(*args)
        if compiled is not None and len(self.code.signatures) != compiled:
            gc.collect()
        return out

    @staticmethod
    def _alloc(q, n, pin):
        """The memory of an AllocationQuery for n samples; pinned CPU memory
        when the batch goes on to a GPU, so that its copy is asynchronous."""
        if q is None:
            return None
        if isinstance(q, (list, tuple)):
            return tuple(_one(x, n, pin) for x in q)
        return _one(q, n, pin)


def _one(q, n, pin):
    device = torch.device(q.device) if q.device is not None else torch.device("cpu")
    if isinstance(q.dtype, torch.dtype) or device.type != "cpu":
        return torch.empty((n, *q.shape), dtype=torch_dtype(q.dtype), device=device, pin_memory=pin and device.type == "cpu")
    if pin:
        return torch.empty((n, *q.shape), dtype=torch_dtype(q.dtype), pin_memory=True).numpy()
    return np.empty((n, *q.shape), dtype=np.dtype(q.dtype))


class OutputPlan:
    """go_ops: the per-sample Go program (None for a custom decoder);
    steps: PyStage/GoTail after it; state: the output's final state."""

    def __init__(self, field, name):
        self.field, self.name = field, name
        self.go_ops, self.steps, self.state = None, [], None
        self.go_names = []  # the class name of each go_ops entry's operation
        self.pin = False  # set by the loader's build: the output goes on to a GPU
        self.finish = None  # set for targets (detection._link_targets): the batch as the user gets it

    def go_signature(self):
        """What the Go side is built from: equal signatures share a build."""
        return {"field": self.field, "ops": self.go_ops,
                "tails": [s.spec() for s in self.steps if isinstance(s, GoTail)]}


def plan_output(field_index, name, ops, field, metadata, memory_read, compiled_stage, view=0):
    try:
        return _plan(field_index, name, ops, field, metadata, memory_read, compiled_stage, view)
    except (TypeError, ValueError) as e:
        if f'"{name}"' in str(e):
            raise
        # ValueError or TypeError itself: a subclass may take other arguments.
        raise (ValueError if isinstance(e, ValueError) else TypeError)(f'output "{name}": {e}') from e


def _plan(field_index, name, ops, field, metadata, memory_read, compiled_stage, view):
    """Plans one output. memory_read() gives FFCV's memory_read for custom
    operations; compiled_stage(op, state, index, decoder) returns a PyStage,
    reusing compiled code where the loader allows. ops are Operations (the
    loader wraps torch modules). view is added to every built-in operation's
    randomness key: views of one field draw apart."""
    plan = OutputPlan(field_index, name)
    state = initial_state()   # the state the user's pipeline has reached
    go_state = state          # the same, before the markers not applied yet
    markers = []              # (index, op) moved past the built-in ops after them
    segment = None            # the Go op list being filled: go_ops or a tail's ops
    key = 0
    chw = False  # batches are (B, C, H, W) views: Go ops, which need (H, W, C), cannot follow
    lead = ()  # a clip decoder's leading dims (T,) or (K, T): per-image ops are lifted over its frames
    for index, op in enumerate(ops):
        op.accept_field(field)
        # Only code run in Python reads memory itself: custom operations, and
        # built-in decoders of fields whose layout Go does not know.
        in_go = op._builtin and (index > 0 or op._go_spec(state) is not None)
        op.accept_globals(metadata, None if in_go else memory_read())
        if index == 0 and not in_go:  # a decoder reading its samples in Python
            stage = compiled_stage(op, state, 0, decoder=True)
            plan.steps.append(stage)
            state = go_state = stage.state
            continue
        if index > 0 and op._marker:
            markers.append((index, op))
            state = op.declare_state_and_memory(state)[0]
            continue
        spec = op._go_spec(_as_go_input(_frame_state(go_state, lead))) if op._builtin and not chw else None
        if spec is not None:
            if segment is None or (segment and _is_batch_spec(segment[-1]) and not getattr(op, "_batch", False)):
                if index == 0:
                    segment = plan.go_ops = []
                else:
                    if go_state.shape is None:
                        raise ValueError(f"{name!r}: {type(op).__name__} (operation {index}) follows a "
                                         f"stage that declares no shape")
                    lifted = _frame_state(go_state, lead) is not go_state
                    tail = GoTail(field_index, _as_go_input(go_state), len(lead) if lifted else 0)
                    tail.after = f"{name!r}, operation {index - 1} ({type(ops[index - 1]).__name__})"
                    plan.steps.append(tail)
                    segment = tail.ops
            # class: Go's errors name the operation as the user wrote it.
            spec = dict(spec, key=view + key, **{"class": type(op).__name__})
            key += 1
            segment.append(spec)
            if segment is plan.go_ops:
                plan.go_names.append(type(op).__name__)
            if index == 0 and getattr(op, "_clip", False):
                lead = tuple(op.declare_state_and_memory(go_state)[0].shape[:-3])
            go_state = _lifted_state(op, go_state, lead)
            state = go_state
            for _, m in markers:
                state = m.declare_state_and_memory(state)[0]
            continue
        if op._runs_in_python(go_state):
            # A Python stage: the markers before it apply first, as written.
            for mi, m in markers:
                plan.steps.append(compiled_stage(m, go_state, mi))
                go_state = plan.steps[-1].state
                chw = chw or m._chw
            markers.clear()
            stage = compiled_stage(op, go_state, index)
            plan.steps.append(stage)
            state = go_state = stage.state
            segment = None
            continue
        misplaced = getattr(op, "_misplaced", None)
        if misplaced is not None:
            raise ValueError(misplaced(name, index, go_state))
        raise ValueError(f"{name!r}: {type(op).__name__} (operation {index}) runs in Go on "
                         f"(H, W, C) uint8 CPU batches; here its input is shape {go_state.shape}, "
                         f"dtype {go_state.dtype}, device {go_state.device}. "
                         f"Put it before ToTorchImage/ToDevice.")
    for mi, m in markers:
        plan.steps.append(compiled_stage(m, go_state, mi))
        go_state = plan.steps[-1].state
    plan.state = state
    if plan.go_ops is not None:  # batches the user gets in another form (captions, token rows, Audio)
        # The last operation's form (an audio transform's), else the decoder's.
        last = next((op for op in reversed(ops) if not op._marker), ops[0])
        plan.finish = getattr(last, "_finish_batch", None) or getattr(ops[0], "_finish_batch", None)
    last = plan.steps[-1] if plan.steps else None
    if isinstance(last, PyStage) and last.kind == "custom" and last.state.jit_mode:
        last.keep_numpy = True  # FFCV hands out what jit-mode custom code returns: numpy arrays
    return plan


def _as_go_input(state):
    """The state as Go sees a CPU batch: numpy dtype, whatever the container."""
    if state.device is not None and torch.device(state.device).type != "cpu":
        return state
    try:
        dt = numpy_dtype(state.dtype)
    except TypeError:
        return state
    return State(jit_mode=True, device=torch.device("cpu"), shape=state.shape, dtype=dt)


def _frame_state(state, lead):
    """The state of one frame of a clip batch (lead: the clip decoder's
    leading dims), or state itself when it is not one."""
    if not lead or state.shape is None or len(state.shape) != len(lead) + 3:
        return state
    return State(jit_mode=state.jit_mode, device=state.device, shape=tuple(state.shape[len(lead):]), dtype=state.dtype)


def _lifted_state(op, state, lead):
    """op's output state; a per-image op after a clip decoder is declared on
    one frame and applies to every frame (the Go program lifts it the same
    way, drawing once per clip)."""
    frame = _frame_state(state, lead)
    out = op.declare_state_and_memory(frame)[0]
    if frame is state or out.shape is None:
        return out
    return State(jit_mode=out.jit_mode, device=out.device, shape=(*lead, *out.shape), dtype=out.dtype)


def _is_batch_spec(spec):
    return spec["op"] in ("image_mixup", "label_mixup")
