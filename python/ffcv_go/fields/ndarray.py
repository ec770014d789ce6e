"""NDArrayField and TorchTensorField: a fixed-shape array per sample."""
import json

import numpy as np

from .base import Field, ARG_TYPE, _set_data, _Decoder
from ..pipeline.allocation_query import AllocationQuery
from ..pipeline.compiler import Compiler
from ..pipeline.state import State

_MAX_DIMS = 32


def _array_args(dtype, shape):
    """Descriptor arguments: shape as 32 u64, then the JSON of dtype.descr."""
    raw = np.zeros(1024, dtype=np.uint8)
    dims = np.zeros(_MAX_DIMS, dtype="<u8")
    dims[:len(shape)] = shape
    raw[:256] = dims.view(np.uint8)
    descr = json.dumps(np.dtype(dtype).descr).encode("ascii")
    raw[256:264] = np.array([len(descr)], dtype="<u8").view(np.uint8)
    raw[264:264 + len(descr)] = np.frombuffer(descr, dtype=np.uint8)
    return raw.view(ARG_TYPE)[0]


def _parse_array_args(binary):
    raw = np.frombuffer(bytes(binary), dtype=np.uint8) if not isinstance(binary, np.ndarray) \
        else np.ascontiguousarray(binary).view(np.uint8).reshape(-1)
    dims = raw[:256].view("<u8")
    shape = tuple(int(x) for x in dims[:np.argmax(dims == 0) if (dims == 0).any() else _MAX_DIMS])
    n = int(raw[256:264].view("<u8")[0])
    descr = json.loads(raw[264:264 + n].tobytes().decode("ascii"))
    dtype = np.dtype([tuple(d) for d in descr]) if descr[0][0] else np.dtype(descr[0][1])
    return dtype, shape


class NDArrayField(Field):
    """A numpy array of a fixed dtype and shape per sample."""
    TYPE_ID = 4

    def __init__(self, dtype, shape):
        self.dtype = np.dtype(dtype)
        self.shape = tuple(int(s) for s in shape)
        if self.dtype.fields is not None or self.dtype.hasobject or self.dtype.itemsize == 0:
            raise TypeError(f"NDArrayField: dtype {self.dtype} is not a fixed-size scalar type")
        if not self.shape:
            # FFCV 1.0 can neither write nor read a field with shape ().
            raise ValueError(f"{type(self).__name__}: shape () is not supported (FFCV 1.0 cannot read 0-d "
                             "arrays); use shape (1,)")
        if len(self.shape) > _MAX_DIMS or any(s <= 0 for s in self.shape):
            raise ValueError(f"NDArrayField: shape {self.shape} must have 1 to 32 positive dimensions")
        self.element_size = self.dtype.itemsize * int(np.prod(self.shape))

    @property
    def metadata_type(self):
        return np.dtype("<u8")

    @staticmethod
    def from_binary(binary):
        # An NDArrayField, also for subclasses (which may take other
        # constructor arguments), as FFCV does.
        dtype, shape = _parse_array_args(binary)
        return NDArrayField(dtype, shape)

    def to_binary(self):
        return _array_args(self.dtype, self.shape)

    def get_decoder_class(self):
        return NDArrayDecoder

    def _spec(self):
        return {"shape": list(self.shape), "dtype": self.dtype.descr[0][1]}

    def encode(self, destination, field, malloc):
        destination[0], data_region = malloc(self.element_size)
        data_region[:] = self._checked(field).reshape(-1).view("<u1")

    def _value(self, value, v, keep):
        _set_data(v, self._checked(value), keep)

    def _checked(self, value):
        """value as an array of the field's shape: any array (or numpy scalar)
        of the field's dtype with as many elements is reshaped, as FFCV does."""
        if isinstance(value, np.generic):
            value = np.asarray(value)
        if not isinstance(value, np.ndarray):
            raise TypeError(f"NDArrayField needs a numpy array, got {type(value).__name__}")
        if value.dtype != self.dtype:
            raise TypeError(f"NDArrayField of {self.dtype} got an array of {value.dtype}")
        if value.shape != self.shape:
            if value.size != int(np.prod(self.shape)):
                raise ValueError(f"NDArrayField of shape {self.shape} got an array of shape {value.shape} "
                                 f"({value.size} elements, not {int(np.prod(self.shape))})")
            value = value.reshape(self.shape)
        return value


class TorchTensorField(NDArrayField):
    """A torch tensor of a fixed dtype and shape per sample (stored as numpy)."""
    TYPE_ID = 6

    def __init__(self, dtype, shape):
        import torch
        self.torch_dtype = dtype if isinstance(dtype, torch.dtype) else None
        if self.torch_dtype is not None:
            dtype = torch.empty(0, dtype=dtype).numpy().dtype
        super().__init__(dtype, shape)

    @classmethod
    def from_binary(cls, binary):
        import torch
        dtype, shape = _parse_array_args(binary)
        return cls(torch.from_numpy(np.empty(0, dtype=dtype)).dtype, shape)

    def get_decoder_class(self):
        return NDArrayDecoder

    def encode(self, destination, field, malloc):
        super().encode(destination, _to_numpy(field), malloc)

    def _value(self, value, v, keep):
        super()._value(_to_numpy(value), v, keep)


def _to_numpy(value):
    import torch
    if isinstance(value, torch.Tensor):
        return value.detach().cpu().numpy()
    return value


class NDArrayDecoder(_Decoder):
    """NDArrayField / TorchTensorField → (B, *shape) of the field's dtype."""
    _go_name = "ndarray"

    def _field_classes(self):
        return (NDArrayField,)

    def declare_state_and_memory(self, previous_state):
        f = self.field
        return (State(previous_state.jit_mode, previous_state.device, f.shape, f.dtype),
                AllocationQuery(f.shape, f.dtype))

    def generate_code(self):
        my_range = Compiler.get_iterator()
        mem_read = self.memory_read
        dtype, shape = self.field.dtype, self.field.shape

        def decoder(indices, destination, metadata, storage_state):
            for ix in my_range(indices.shape[0]):
                data = mem_read(metadata[indices[ix]], storage_state)
                destination[ix] = data.view(dtype).reshape(shape)
            return destination[:len(indices)]
        return decoder
