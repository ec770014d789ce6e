"""TextField: UTF-8 captions, one or several per sample, optionally with the
token ids of the user's tokenizer stored beside them at write time; and its
decoders: fixed-length token rows as open_clip's ``tokenize`` makes them, or
the raw strings."""
import json
from typing import NamedTuple

import numpy as np

from .base import Field, ARG_TYPE, _Decoder
from ..pipeline.allocation_query import AllocationQuery
from ..pipeline.operation import _check_spec
from ..pipeline.state import State

__all__ = ["TextField", "TokenDecoder", "CaptionDecoder", "Tokens"]


class TextField(Field):
    """One or several UTF-8 captions per sample (COCO Captions has five):
    a value is a ``str`` (or UTF-8 ``bytes``) or a list of them.

    With a ``tokenizer`` every caption's token ids are stored beside it,
    made once at write time, and :class:`TokenDecoder` turns them into
    fixed-length rows at load time. The tokenizer may be

    - open_clip's ``SimpleTokenizer`` (``open_clip.get_tokenizer(...)`` or
      ``open_clip.tokenizer.SimpleTokenizer()``): its BPE ids, start and end
      tokens; rows then equal ``open_clip.tokenize``'s;
    - a Hugging Face tokenizer (``transformers`` or ``tokenizers``): ids
      without special tokens; its bos/cls and eos/sep tokens become the
      start and end tokens, its pad token the padding;
    - any callable taking one string and returning its token ids; give
      ``sot``, ``eot`` and ``pad`` (default 0) yourself.

    ``sot``, ``eot``, ``pad`` and ``vocab_size`` override what the
    tokenizer says. The loader draws one caption of a sample per epoch.
    FFCV cannot read files with this field (type id 102)."""
    TYPE_ID = 102

    def __init__(self, tokenizer=None, sot=None, eot=None, pad=None, vocab_size=None):
        self.tokenizer = tokenizer
        self._tok = None if tokenizer is None else _Tokenizer(tokenizer)
        info = self._tok.info if self._tok is not None else {}
        if tokenizer is None and any(x is not None for x in (sot, eot, pad, vocab_size)):
            raise ValueError("TextField: sot, eot, pad and vocab_size describe tokens: give a tokenizer")
        self.tokens = tokenizer is not None
        self.sot = _token_id("sot", sot if sot is not None else info.get("sot"))
        self.eot = _token_id("eot", eot if eot is not None else info.get("eot"))
        self.pad = _token_id("pad", pad if pad is not None else info.get("pad", 0 if self.tokens else None))
        self.vocab_size = _token_id("vocab_size", vocab_size if vocab_size is not None else info.get("vocab_size"))
        self.tokenizer_name = info.get("name", "")
        for name in ("sot", "eot", "pad"):
            x = getattr(self, name)
            if x is not None and self.vocab_size and x >= self.vocab_size:
                raise ValueError(f"TextField: {name} {x} lies outside the vocabulary of {self.vocab_size}")

    @property
    def metadata_type(self):
        return np.dtype([("ptr", "<u8"), ("size", "<u8"), ("captions", "<u4"), ("max_bytes", "<u4"),
                         ("max_tokens", "<u4"), ("_pad", "<u4")], align=True)

    def _args(self):
        a = {}
        if self.tokens:
            a["tokens"] = True
            for k in ("vocab_size", "sot", "eot"):
                if getattr(self, k) is not None:
                    a[k] = getattr(self, k)
            if self.pad:
                a["pad"] = self.pad
            if self.tokenizer_name:
                a["tokenizer"] = self.tokenizer_name
        return a

    @staticmethod
    def from_binary(binary):
        raw = np.ascontiguousarray(binary).view(np.uint8).reshape(-1).tobytes() \
            if isinstance(binary, np.ndarray) else bytes(binary)
        a = json.loads(raw.split(b"\0", 1)[0] or b"{}")
        f = TextField()
        if a.get("tokens"):
            f.tokens = True
            f.sot, f.eot, f.pad, f.vocab_size = a.get("sot"), a.get("eot"), a.get("pad", 0), a.get("vocab_size")
            f.tokenizer_name = a.get("tokenizer", "")
        return f

    def to_binary(self):
        raw = np.zeros(1024, dtype=np.uint8)
        b = json.dumps(self._args(), separators=(",", ":")).encode()
        raw[:len(b)] = np.frombuffer(b, dtype=np.uint8)
        return raw.view(ARG_TYPE)[0]

    def get_decoder_class(self):
        return TokenDecoder if self.tokens else CaptionDecoder

    def _spec(self):
        return {"text": self._args()}

    def _captions(self, value):
        """value as a list of UTF-8 bytes, one per caption."""
        if isinstance(value, (str, bytes, bytearray)):
            value = [value]
        elif not isinstance(value, (list, tuple)):
            raise TypeError(f"TextField needs a str or a list of str, got {type(value).__name__}")
        out = []
        for c in value:
            if isinstance(c, str):
                out.append(c.encode("utf-8"))
            elif isinstance(c, (bytes, bytearray)):
                out.append(bytes(c))
            else:
                raise TypeError(f"TextField: a caption is a str, not a {type(c).__name__}")
        if not out:
            raise ValueError("TextField needs at least one caption")
        return out

    def _value(self, value, v, keep):
        caps = self._captions(value)
        lens = [len(c) for c in caps]
        words = lens
        if self.tokens:
            ids = self._tok.encode([c.decode("utf-8", "strict") for c in caps])
            words = lens + [len(x) for x in ids] + [t for x in ids for t in x]
        data = np.frombuffer(b"".join(caps), dtype=np.uint8)
        column = np.asarray(words, dtype=np.int64)
        if column.size and (column.min() < 0 or column.max() > 0xFFFFFFFF):
            raise ValueError("TextField: token ids must lie in [0, 2**32)")
        column = column.astype("<u4")
        keep += [data, column]
        v.i = len(caps)
        v.data, v.len = (data.ctypes.data if data.nbytes else None), data.nbytes
        v.column, v.column_len = (column.ctypes.data if column.nbytes else None), column.nbytes

    def _portable(self, value):
        return value


def _token_id(name, x):
    if x is None:
        return None
    if isinstance(x, bool) or not isinstance(x, (int, np.integer)) or not 0 <= int(x) < 2**32:
        raise ValueError(f"TextField: {name} {x!r} must be an integer in [0, 2**32)")
    return int(x)


class _Tokenizer:
    """The user's tokenizer as a batch encoder of ids without special tokens,
    and what it says about its vocabulary (info)."""

    def __init__(self, tok):
        self.info = {}
        inner = getattr(tok, "tokenizer", None)
        if type(tok).__name__ == "HFTokenizer" and inner is not None:  # open_clip's wrapper of a HF tokenizer
            tok = inner
        kind = type(tok).__module__.split(".")[0]
        if hasattr(tok, "encode") and hasattr(tok, "sot_token_id") and hasattr(tok, "eot_token_id"):
            # open_clip's SimpleTokenizer: tokenize() is [sot] + encode(text) + [eot], cut, zero-padded.
            self.info = {"name": f"{type(tok).__module__}.{type(tok).__name__}", "sot": tok.sot_token_id,
                         "eot": tok.eot_token_id, "pad": 0,
                         "vocab_size": getattr(tok, "vocab_size", None) or len(getattr(tok, "encoder", ())) or None}
            self.encode = lambda texts: [list(tok.encode(t)) for t in texts]
        elif kind == "tokenizers" and hasattr(tok, "encode_batch"):
            self.info = _hf_specials(tok.token_to_id, tok.get_vocab_size(), "tokenizers.Tokenizer")
            self.encode = lambda texts: [e.ids for e in tok.encode_batch(texts, add_special_tokens=False)]
        elif hasattr(tok, "convert_tokens_to_ids") and hasattr(tok, "batch_decode"):  # transformers
            ids = {k: getattr(tok, k, None) for k in ("bos_token_id", "cls_token_id", "eos_token_id", "sep_token_id",
                                                     "pad_token_id")}
            self.info = {"name": f"transformers.{type(tok).__name__}",
                         "sot": ids["bos_token_id"] if ids["bos_token_id"] is not None else ids["cls_token_id"],
                         "eot": ids["eos_token_id"] if ids["eos_token_id"] is not None else ids["sep_token_id"],
                         "pad": ids["pad_token_id"] or 0, "vocab_size": len(tok)}
            self.encode = lambda texts: tok(list(texts), add_special_tokens=False)["input_ids"]
        elif callable(tok):
            self.info = {"name": getattr(tok, "__qualname__", type(tok).__name__)}
            self.encode = lambda texts: [list(tok(t)) for t in texts]
        else:
            raise TypeError(f"TextField: tokenizer {tok!r} is not open_clip's SimpleTokenizer, a Hugging Face "
                            "tokenizer or a callable")

    def __call__(self, texts):
        """Token ids of texts as (offsets, ids): uint64 (n + 1,) and uint32."""
        lists = self.encode(texts)
        if len(lists) != len(texts):
            raise ValueError(f"the tokenizer gave {len(lists)} token lists for {len(texts)} texts")
        counts = np.fromiter((len(x) for x in lists), dtype=np.uint64, count=len(lists))
        offsets = np.zeros(len(lists) + 1, dtype=np.uint64)
        np.cumsum(counts, out=offsets[1:])
        flat = np.fromiter((t for x in lists for t in x), dtype=np.int64, count=int(offsets[-1]))
        if flat.size and (flat.min() < 0 or flat.max() > 0xFFFFFFFF):
            raise ValueError("the tokenizer gave token ids outside [0, 2**32)")
        return offsets, flat.astype(np.uint32)


def _hf_specials(token_to_id, vocab, name):
    """Start, end and pad ids of a tokenizers.Tokenizer, from its usual special tokens."""
    def first(*names):
        for n in names:
            i = token_to_id(n)
            if i is not None:
                return i
        return None
    return {"name": name, "vocab_size": vocab,
            "sot": first("<|startoftext|>", "<s>", "[CLS]", "<bos>", "<start_of_text>"),
            "eot": first("<|endoftext|>", "</s>", "[SEP]", "<eos>", "<end_of_text>"),
            "pad": first("<pad>", "[PAD]") or 0}


class Tokens(NamedTuple):
    """A batch of token rows: ``ids`` (B, context_length), and, as asked,
    ``lengths`` (B,) (tokens before the padding) or ``attention_mask``
    (B, context_length) (1 for them, then 0); views of one batch buffer."""
    ids: "object"
    lengths: "object" = None
    attention_mask: "object" = None


class TokenDecoder(_Decoder):
    """TextField (written with a tokenizer) → int64 (B, context_length)
    token rows exactly as open_clip's ``tokenize`` makes them: the start
    token, the caption's ids and the end token, cut to context_length with
    the end token last, then padding. ``extra='lengths'`` or
    ``'attention_mask'`` returns ``Tokens(ids, lengths | attention_mask)``.
    sot, eot and pad override the field's; ``dtype`` may be torch.int32.
    Of several captions, one is drawn per sample and epoch (keyed like every
    random operation: by seed, epoch, position and the operation's index)."""
    _go_name = "text_tokens"

    def __init__(self, context_length=77, extra=None, sot=None, eot=None, pad=None, dtype=None):
        super().__init__()
        self.context_length = int(context_length)
        if extra not in (None, "lengths", "attention_mask"):
            raise ValueError(f"TokenDecoder: extra {extra!r} must be None, 'lengths' or 'attention_mask'")
        self.extra = extra
        self.sot, self.eot, self.pad = sot, eot, pad
        self.np_dtype = _int_dtype(dtype)
        _check_spec(self, self._go_spec())

    def _field_classes(self):
        return (TextField,)

    def _width(self):
        return self.context_length + {None: 0, "lengths": 1, "attention_mask": self.context_length}[self.extra]

    def declare_state_and_memory(self, previous_state):
        shape = (self._width(),)
        return (State(previous_state.jit_mode, previous_state.device, shape, self.np_dtype),
                AllocationQuery(shape, self.np_dtype))

    def _go_spec(self, previous_state=None):
        spec = {"op": "text_tokens", "context_length": self.context_length,
                "extra": {None: "", "lengths": "lengths", "attention_mask": "mask"}[self.extra],
                "dtype": self.np_dtype.str}
        for k in ("sot", "eot", "pad"):
            if getattr(self, k) is not None:
                spec[k] = int(getattr(self, k))
        return spec

    def accept_field(self, field):
        super().accept_field(field)
        if isinstance(field, TextField) and not field.tokens:
            raise ValueError("TokenDecoder: this TextField stores no tokens (write it with a tokenizer), "
                             "or decode its raw text with CaptionDecoder")

    def _finish_batch(self, x):
        if self.extra is None:
            return x
        n = self.context_length
        ids = x[:, :n]
        if self.extra == "lengths":
            return Tokens(ids, lengths=x[:, n])
        return Tokens(ids, attention_mask=x[:, n:])

    def generate_code(self):
        raise NotImplementedError("TokenDecoder runs in the Go core only")


class CaptionDecoder(_Decoder):
    """TextField → a list of B strings: each sample's caption (one of
    several drawn per epoch, as TokenDecoder draws). Captions longer than
    max_bytes (default: the longest in the file) are cut at a whole
    character."""
    _go_name = "text_raw"

    def __init__(self, max_bytes=None):
        super().__init__()
        self.max_bytes = None if max_bytes is None else int(max_bytes)
        _check_spec(self, {"op": "text_raw", "max_bytes": self.max_bytes or 0})

    def _field_classes(self):
        return (TextField,)

    def _bytes(self):
        if self.max_bytes is not None:
            return self.max_bytes
        m = self.metadata["max_bytes"] if self.metadata is not None else np.zeros(0)
        return int(m.max()) if len(m) else 0

    def declare_state_and_memory(self, previous_state):
        shape = (8 + self._bytes(),)
        return (State(previous_state.jit_mode, previous_state.device, shape, np.dtype("u1")),
                AllocationQuery(shape, np.dtype("u1")))

    def _go_spec(self, previous_state=None):
        return {"op": "text_raw", "max_bytes": self._bytes()}

    def _finish_batch(self, x):
        a = x.cpu().numpy() if hasattr(x, "cpu") else np.asarray(x)
        n = a[:, :8].copy().view("<u8").reshape(-1)
        return [bytes(row[8:8 + k]).decode("utf-8") for row, k in zip(a, n.tolist())]

    def generate_code(self):
        raise NotImplementedError("CaptionDecoder runs in the Go core only")


def _int_dtype(dtype):
    if dtype is None:
        return np.dtype("<i8")
    name = str(dtype).replace("torch.", "")
    if name in ("int64", "long"):
        return np.dtype("<i8")
    if name in ("int32", "int"):
        return np.dtype("<i4")
    raise ValueError(f"TokenDecoder: dtype {dtype} must be torch.int64 or torch.int32")
