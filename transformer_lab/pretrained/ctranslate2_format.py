"""CTranslate2's model.bin, read with struct and NumPy (no CTranslate2 code runs).

CTranslate2 (OpenNMT) saves a converted model as one binary file, written by
ModelSpec._serialize in its Python package and read by models::Model::load in
src/models/model.cc. Every number is little-endian; a string is a uint16 length
that counts a closing zero byte, then the UTF-8 bytes and that zero. The layout:

- uint32 binary version (1 to 6; the version is the file's only signature, there is
  no magic number);
- from version 2: the spec's name (a string, e.g. WhisperSpec) and its uint32
  revision;
- uint32 number of variables, then for each: its name (a string), uint8 rank,
  rank sizes as uint32, the data type (from version 4 an uint8 type id:
  0 float32, 1 int8, 2 int16, 3 int32, 4 float16, 5 bfloat16, then the uint32 size of
  the payload in bytes; before version 4 an uint8 item size, 4, 2 or 1 bytes for
  float32, int16 or int8, then the uint32 number of items), then the payload in
  C order;
- from version 3: uint32 number of aliases, then pairs of strings (alias, name): a
  second name for a variable, e.g. a tied output projection.

read_ctranslate2 returns a CTranslate2Model whose variables keep the
file's order and data types (a rank-0 variable, a setting such as a head count or a flag,
is a 0-d tensor). A file that is not what it should be raises a ValueError that names the
file and the problem; sizes are checked against the bytes left before anything is
allocated, so a damaged length neither hangs nor asks for gigabytes.
"""

from __future__ import annotations

import struct
from collections import OrderedDict
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import torch

from transformer_lab.checks import instance_of, integer, torch_tensor

__all__ = [
    "CTranslate2Model",
    "MissingVariableError",
    "read_ctranslate2",
    "write_ctranslate2",
    "CURRENT_BINARY_VERSION",
    "DTYPES",
]

CURRENT_BINARY_VERSION = 6  # the newest layout CTranslate2 4.x writes and reads
MAX_RANK = 8  # CTranslate2 writes vectors, matrices and convolution kernels (rank 3)

# type id -> (name, NumPy dtype of the stored bytes, torch dtype of the tensor)
DTYPES: dict[int, tuple[str, np.dtype, torch.dtype]] = {
    0: ("float32", np.dtype("<f4"), torch.float32),
    1: ("int8", np.dtype("i1"), torch.int8),
    2: ("int16", np.dtype("<i2"), torch.int16),
    3: ("int32", np.dtype("<i4"), torch.int32),
    4: ("float16", np.dtype("<f2"), torch.float16),
    5: ("bfloat16", np.dtype("<u2"), torch.bfloat16),  # NumPy has none: read the bits
}
_OLD_ITEM_SIZES = {4: 0, 2: 2, 1: 1}  # versions 1 to 3: item size -> type id


class MissingVariableError(KeyError, ValueError):
    """A variable the caller needs is not in the file (a KeyError and a ValueError)."""

    def __str__(self) -> str:
        return str(self.args[0]) if self.args else ""


@dataclass
class CTranslate2Model:
    """What read_ctranslate2 found: the binary_version, the spec name and
    revision ("" and 1 for version 1 files), variables (name -> tensor in the
    file's order and data type) and aliases (second name -> name of a variable)."""

    path: Path
    binary_version: int
    spec: str
    revision: int
    variables: OrderedDict[str, torch.Tensor] = field(default_factory=OrderedDict)
    aliases: dict[str, str] = field(default_factory=dict)

    def get(self, name: str) -> torch.Tensor:
        """The variable name, through its alias if it is one; a MissingVariableError (a
        KeyError and a ValueError) names the file."""
        instance_of(name, str, "name")
        real = self.aliases.get(name, name)
        if real not in self.variables:
            raise MissingVariableError(f"{self.path} has no variable {name!r}")
        return self.variables[real]


class _Reader:
    """A cursor over the file's bytes whose every read checks what is left."""

    def __init__(self, data: bytearray, path: Path):
        self.data, self.path, self.pos = data, path, 0

    def fail(self, problem: str) -> ValueError:
        return ValueError(f"{self.path} is not a valid CTranslate2 model.bin: {problem}")

    def take(self, n: int, what: str) -> memoryview:
        if n > len(self.data) - self.pos:
            raise self.fail(
                f"truncated: {what} needs {n} bytes at offset {self.pos}, but the file has "
                f"{len(self.data) - self.pos} left (of {len(self.data)})"
            )
        view = memoryview(self.data)[self.pos : self.pos + n]
        self.pos += n
        return view

    def number(self, fmt: str, what: str) -> int:
        return struct.unpack("<" + fmt, self.take(struct.calcsize(fmt), what))[0]

    def string(self, what: str) -> str:
        n = self.number("H", f"the length of {what}")
        if n == 0:
            raise self.fail(f"{what} has length 0 at offset {self.pos - 2} (a string has >= 1)")
        raw = bytes(self.take(n, what))
        if raw[-1] != 0:
            raise self.fail(f"{what} at offset {self.pos - n} does not end with a zero byte")
        try:
            return raw[:-1].decode("utf-8")
        except UnicodeDecodeError as err:
            raise self.fail(f"{what} at offset {self.pos - n} is not UTF-8") from err


def read_ctranslate2(path: str | Path) -> CTranslate2Model:
    """Read a CTranslate2 model.bin (a file, or the folder holding one).

    Returns a CTranslate2Model; each variable is a tensor of its stored data type
    (float16 stays float16; converting is the caller's choice). Raises FileNotFoundError
    for a missing file and ValueError, naming the file, for a damaged one: a binary version
    other than 1 to 6, a truncated file, an unknown data type, a rank above 8, a payload
    size that does not match the shape, a repeated name, an alias to nothing or bytes left
    after the end.
    """
    instance_of(path, (str, Path), "path", "a str or Path")
    path = Path(path)
    if path.is_dir():
        path = path / "model.bin"
    if not path.is_file():
        raise FileNotFoundError(f"no CTranslate2 model.bin at {path}")
    data = bytearray(path.read_bytes())
    r = _Reader(data, path)
    version = r.number("I", "the binary version")
    if not 1 <= version <= CURRENT_BINARY_VERSION:
        raise r.fail(
            f"binary version {version} (bytes {bytes(data[:4]).hex()}) is not one this reader "
            f"knows (1 to {CURRENT_BINARY_VERSION}); is it a CTranslate2 model at all?"
        )
    spec, revision = "", 1
    if version >= 2:
        spec = r.string("the spec name")
        revision = r.number("I", "the spec revision")
    model = CTranslate2Model(path, version, spec, revision)
    n_variables = r.number("I", "the number of variables")
    for i in range(n_variables):
        name = r.string(f"the name of variable {i}")
        if name in model.variables:
            raise r.fail(f"variable {name!r} appears twice")
        model.variables[name] = _read_variable(r, name, version)
    if version >= 3:
        for i in range(r.number("I", "the number of aliases")):
            alias = r.string(f"alias {i}")
            target = r.string(f"the variable of alias {alias!r}")
            if target not in model.variables:
                raise r.fail(f"alias {alias!r} names {target!r}, which is not a variable")
            model.aliases[alias] = target
    if r.pos != len(data):
        raise r.fail(f"{len(data) - r.pos} bytes follow the end of the model at offset {r.pos}")
    return model


def _read_variable(r: _Reader, name: str, version: int) -> torch.Tensor:
    rank = r.number("B", f"the rank of {name!r}")
    if rank > MAX_RANK:
        raise r.fail(f"variable {name!r} has rank {rank}; at most {MAX_RANK} is expected")
    shape = tuple(r.number("I", f"size {d} of {name!r}") for d in range(rank))
    count = int(np.prod(shape, dtype=object)) if shape else 1
    if version >= 4:
        type_id = r.number("B", f"the data type of {name!r}")
        if type_id not in DTYPES:
            raise r.fail(
                f"variable {name!r} has data type id {type_id}; known ids are "
                + ", ".join(f"{k} ({v[0]})" for k, v in DTYPES.items())
            )
        n_bytes = r.number("I", f"the payload size of {name!r}")
    else:
        item_size = r.number("B", f"the item size of {name!r}")
        if item_size not in _OLD_ITEM_SIZES:
            raise r.fail(f"variable {name!r} has item size {item_size}; expected 4, 2 or 1")
        type_id = _OLD_ITEM_SIZES[item_size]
        n_bytes = r.number("I", f"the item count of {name!r}") * item_size
    label, np_dtype, torch_dtype = DTYPES[type_id]
    if n_bytes != count * np_dtype.itemsize:
        raise r.fail(
            f"variable {name!r} of shape {list(shape)} and type {label} needs "
            f"{count * np_dtype.itemsize} bytes, but its payload size says {n_bytes}"
        )
    raw = r.take(n_bytes, f"the payload of {name!r}")
    array = np.frombuffer(raw, dtype=np_dtype).reshape(shape).copy()  # aligned and writable
    tensor = torch.from_numpy(array)
    return tensor.view(torch_dtype) if torch_dtype == torch.bfloat16 else tensor


_TYPE_IDS = {torch_dtype: type_id for type_id, (_, _, torch_dtype) in DTYPES.items()}


def write_ctranslate2(
    path: str | Path,
    variables: dict[str, torch.Tensor],
    *,
    spec: str = "",
    revision: int = 1,
    aliases: dict[str, str] | None = None,
) -> Path:
    """Write variables (name -> tensor of a data type in DTYPES) and aliases as a model.bin
    of binary version 6, the layout read_ctranslate2 reads; returns the path. An existing
    folder gets its model.bin inside. Used to make small and damaged files for tests."""
    instance_of(path, (str, Path), "path", "a str or Path")
    instance_of(variables, dict, "variables", "a dict of name -> tensor")
    instance_of(spec, str, "spec")
    revision = integer(revision, "revision", minimum=0)
    if revision >= 2**32:
        raise ValueError(f"revision must fit in 32 bits, got {revision}")
    aliases = {} if aliases is None else instance_of(aliases, dict, "aliases", "a dict")
    if not spec:
        raise ValueError("spec must name the model's specification, e.g. 'WhisperSpec'")
    chunks = [struct.pack("<I", CURRENT_BINARY_VERSION), _string(spec, "spec")]
    chunks.append(struct.pack("<II", revision, len(variables)))
    for name, tensor in variables.items():
        instance_of(name, str, "a variable name")
        torch_tensor(tensor, f"variable {name!r}")
        if tensor.dtype not in _TYPE_IDS:
            known = ", ".join(v[0] for v in DTYPES.values())
            raise TypeError(f"variable {name!r} is {tensor.dtype}; the format stores {known}")
        if tensor.dim() > MAX_RANK:
            raise ValueError(f"variable {name!r} has rank {tensor.dim()}; at most {MAX_RANK}")
        data = tensor.detach().cpu().contiguous()
        if data.dtype == torch.bfloat16:
            data = data.view(torch.int16)
        array = data.numpy()
        raw = array.astype(array.dtype.newbyteorder("<"), copy=False).tobytes()
        if len(raw) >= 2**32 or any(n >= 2**32 for n in tensor.shape):
            raise ValueError(f"variable {name!r} is too large for the format's 32-bit sizes")
        chunks += [_string(name, "a variable name"), struct.pack("<B", tensor.dim())]
        chunks += [struct.pack("<I", n) for n in tensor.shape]
        chunks.append(struct.pack("<BI", _TYPE_IDS[tensor.dtype], len(raw)))
        chunks.append(raw)
    chunks.append(struct.pack("<I", len(aliases)))
    for alias, target in aliases.items():
        if target not in variables:
            raise ValueError(f"alias {alias!r} names {target!r}, which is not a variable")
        chunks += [_string(alias, "an alias"), _string(target, "an alias's variable")]
    path = Path(path)
    if path.is_dir():
        path = path / "model.bin"
    path.write_bytes(b"".join(chunks))
    return path


def _string(text: str, what: str) -> bytes:
    instance_of(text, str, what)
    raw = text.encode("utf-8")
    if not raw or len(raw) + 1 >= 2**16 or b"\0" in raw:
        raise ValueError(f"{what} must be 1 to 65534 bytes of UTF-8 without a zero byte")
    return struct.pack("<H", len(raw) + 1) + raw + b"\0"
