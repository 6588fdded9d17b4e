"""Differential oracle for manifest's request normalization.

Runs what the upstream host runs on request arguments: strict JSON (the
integer range and duplicate keys; the generator writes nothing else the
strict parser refuses), the
Draft 2020-12 JSON Schema check of the published request schema (no format
assertions), the capability model's model_validate (lax), model_dump(mode=
"json"), and the host's canonical-JSON rules (integers within +-(2**53-1),
finite floats). Standard library and pydantic (plus jsonschema) only.

Usage:
  python3 oracle.py schemas        -> {"claimed": {name: schema}, "unsupported": {name: schema}}
  python3 oracle.py run < cases    -> {"results": [...]}, one per case, in order

A case is {"model": name, "args": "<JSON text>"}. A result is
{"ok": true, "dump": value} or {"ok": false, "stage": "json"|"schema"|
"pydantic"|"canon"|"exception", "pointers": [JSON pointers of the refusal]}.
"""

import datetime
import decimal
import enum
import ipaddress
import json
import pathlib
import sys
import uuid
from typing import Annotated, Any, Literal, Optional, Union

import jsonschema
from pydantic import (
    UUID1,
    UUID4,
    AnyUrl,
    AwareDatetime,
    BaseModel,
    ConfigDict,
    Field,
    HttpUrl,
    IPvAnyAddress,
    IPvAnyInterface,
    IPvAnyNetwork,
    SecretStr,
    ValidationError,
    condecimal,
    confloat,
    conint,
    constr,
    field_validator,
)

UTC = datetime.timezone.utc


class Color(enum.Enum):
    RED = "red"
    GREEN = "green"
    BLUE = "blue"


class Level(enum.IntEnum):
    LOW = 1
    MID = 2
    HIGH = 3


class Inner(BaseModel):
    label: str = "none"
    at: datetime.datetime = datetime.datetime(2020, 1, 2, 3, 4, 5, 600000, tzinfo=UTC)
    count: int = 3


class Times(BaseModel):
    dt: datetime.datetime
    d: datetime.date
    t: datetime.time
    td: datetime.timedelta
    dt_opt: Optional[datetime.datetime] = None
    d_def: datetime.date = datetime.date(2021, 2, 3)
    td_def: datetime.timedelta = datetime.timedelta(days=1, seconds=7200, microseconds=5)


class Ids(BaseModel):
    u: uuid.UUID
    u1: UUID1 = uuid.UUID("12345678-1234-1678-8234-567812345678")
    u4: UUID4
    u_opt: Optional[uuid.UUID] = None


class Net(BaseModel):
    v4: ipaddress.IPv4Address
    v6: ipaddress.IPv6Address
    anyaddr: IPvAnyAddress
    net4: ipaddress.IPv4Network
    net6: ipaddress.IPv6Network
    anynet: IPvAnyNetwork
    if4: ipaddress.IPv4Interface
    if6: ipaddress.IPv6Interface
    anyif: IPvAnyInterface


class Numbers(BaseModel):
    i: int
    f: float
    dec: decimal.Decimal
    pos: conint(gt=0, le=1000)
    b: bool = False
    s: str = ""
    code: constr(pattern=r"^[a-z]+\d*$", min_length=1, max_length=12) = "a1"
    color: Color = Color.RED
    level: Level = Level.MID
    lit: Literal["x", "y", 3] = "x"
    dec_def: decimal.Decimal = decimal.Decimal("1.50")
    tenth: confloat(multiple_of=0.1) = 0.0
    third: conint(multiple_of=3) = 0


class Collections(BaseModel):
    ints: list[int] = []
    inners: list[Inner] = []
    iset: set[int] = set()
    ifset: frozenset[int] = frozenset()
    fset: set[float] = set()
    uset: set[uuid.UUID] = set()
    tdset: set[datetime.timedelta] = set()
    decset: set[decimal.Decimal] = set()
    numset: set[Union[int, float]] = set()
    pair: tuple[int, str, datetime.datetime] = (1, "a", datetime.datetime(2020, 1, 1))
    var: tuple[int, ...] = ()
    when: dict[str, datetime.datetime] = {}
    inner: Inner = Inner()
    maybe: Optional[Inner] = None


class Cat(BaseModel):
    pet_type: Literal["cat"]
    lives: int = 9
    born: Optional[datetime.date] = None


class Dog(BaseModel):
    pet_type: Literal["dog"]
    good: bool = True
    walked: Optional[datetime.datetime] = None


class ShapeA(BaseModel):
    x: int = 0


class ShapeB(BaseModel):
    y: int = 0
    x: int = 0


class Unions(BaseModel):
    int_or_str: Union[int, str] = 0
    int_or_float: Union[int, float] = 0
    float_or_int: Union[float, int] = 0
    dt_or_str: Union[datetime.datetime, str] = ""
    date_or_dt: Union[datetime.date, datetime.datetime] = datetime.date(2020, 1, 1)
    int_or_dt: Union[int, datetime.datetime] = 0
    opt_dt: Optional[datetime.datetime] = None
    pet: Annotated[Union[Cat, Dog], Field(discriminator="pet_type")] = Cat(pet_type="cat")
    shape: Union[ShapeA, ShapeB] = ShapeA()
    mixed: list[Union[int, str]] = []
    bool_or_int: Union[bool, int] = False


class MoreUnions(BaseModel):
    model_or_dict: Union[ShapeA, dict] = ShapeA()
    dict_or_model: Union[dict, ShapeA] = {}
    tuple_or_list: Union[tuple[int, int], list[int]] = []
    set_or_list: Union[set[int], list[int]] = []
    list_or_set: Union[list[int], set[int]] = []
    lit_or_str: Union[Literal["a", "b"], str] = ""
    enum_or_str: Union[Color, str] = ""
    str_or_enum: Union[str, Color] = ""
    uuid_or_str: Union[uuid.UUID, str] = ""
    ip6_or_str: Union[ipaddress.IPv6Address, str] = ""
    str_or_ip6: Union[str, ipaddress.IPv6Address] = ""
    td_or_int: Union[datetime.timedelta, int] = 0
    int_or_td: Union[int, datetime.timedelta] = 0
    path_or_str: Union[pathlib.Path, str] = ""
    date_or_int: Union[datetime.date, int] = 0
    time_or_float: Union[datetime.time, float] = 0.0
    int_none_str: Union[int, None, str] = None
    url_or_str: Union[AnyUrl, str] = ""
    bool_or_str: Union[bool, str] = ""
    float_or_bool: Union[float, bool] = 0.0


class IgnoreExtra(BaseModel):
    keep: int = 1
    nested: Inner = Inner()


class ForbidExtra(BaseModel):
    model_config = ConfigDict(extra="forbid")
    keep: int = 1


class AllowExtra(BaseModel):
    model_config = ConfigDict(extra="allow")
    keep: int = 1


class Misc(BaseModel):
    secret: SecretStr = SecretStr("")
    path: pathlib.Path = pathlib.Path(".")
    raw: bytes = b""
    anything: Any = None


class Tree(BaseModel):
    name: str
    at: Optional[datetime.datetime] = None
    children: list["Tree"] = []


class Links(BaseModel):
    url: AnyUrl
    opt_url: Optional[AnyUrl] = None
    urls: list[AnyUrl] = []


# Models whose normalization the published schema cannot describe: each is
# a known disagreement listed in doc/pydantic.md.
class Aliased(BaseModel):
    user_name: str = Field(alias="userName")


class Factory(BaseModel):
    items: list[int] = Field(default_factory=lambda: [1, 2, 3])


class Rewritten(BaseModel):
    name: str

    @field_validator("name")
    @classmethod
    def upper(cls, v: str) -> str:
        return v.upper()


class Stripped(BaseModel):
    name: constr(strip_whitespace=True)


class StrSet(BaseModel):
    tags: set[str]


class DecimalPlaces(BaseModel):
    amount: condecimal(max_digits=5, decimal_places=2)


class HttpOnly(BaseModel):
    url: HttpUrl


class FloatOrDecimal(BaseModel):
    amount: Union[float, decimal.Decimal]


class AwareOnly(BaseModel):
    at: AwareDatetime


class IntKeys(BaseModel):
    names: dict[int, str]


CLAIMED = [Times, Ids, Net, Numbers, Collections, Unions, MoreUnions, IgnoreExtra, ForbidExtra, AllowExtra, Misc, Tree, Links]
UNSUPPORTED = [Aliased, Factory, Rewritten, Stripped, StrSet, DecimalPlaces, FloatOrDecimal, HttpOnly, AwareOnly, IntKeys]
MODELS = {m.__name__: m for m in CLAIMED + UNSUPPORTED}
MAX_SAFE = 2**53 - 1


def pointer(tokens):
    return "".join("/" + str(t).replace("~", "~0").replace("/", "~1") for t in tokens)


def data_pointer(args, loc):
    """The JSON pointer of the deepest input value a pydantic loc names
    (locs also hold union member names, which are not in the data)."""
    cur, tokens = args, []
    for t in loc:
        if isinstance(cur, dict) and isinstance(t, str) and t in cur:
            cur = cur[t]
        elif isinstance(cur, list) and isinstance(t, int) and 0 <= t < len(cur):
            cur = cur[t]
        elif isinstance(cur, dict) and isinstance(t, str) and not tokens and t not in cur:
            tokens.append(t)  # a missing field: the pointer names it
            break
        else:
            continue
        tokens.append(t)
    return pointer(tokens)


def canonical_ok(v):
    if isinstance(v, bool) or v is None or isinstance(v, str):
        return True
    if isinstance(v, int):
        return -MAX_SAFE <= v <= MAX_SAFE
    if isinstance(v, float):
        return v == v and v not in (float("inf"), float("-inf"))
    if isinstance(v, list):
        return all(canonical_ok(e) for e in v)
    if isinstance(v, dict):
        return all(canonical_ok(e) for e in v.values())
    return False


class StrictJSONError(ValueError):
    pass


def strict_int(token):
    """The host's strict JSON refuses integer literals it cannot hash."""
    n = int(token)
    if not -MAX_SAFE <= n <= MAX_SAFE:
        raise StrictJSONError(token)
    return n


def no_duplicates(pairs):
    keys = [k for k, _ in pairs]
    if len(set(keys)) != len(keys):
        raise StrictJSONError("duplicate key")
    return dict(pairs)


def run_case(validators, case):
    model = MODELS[case["model"]]
    try:
        args = json.loads(case["args"], parse_int=strict_int, object_pairs_hook=no_duplicates)
    except StrictJSONError:
        return {"ok": False, "stage": "json", "pointers": [""]}
    errors = list(validators[case["model"]].iter_errors(args))
    if errors:
        return {"ok": False, "stage": "schema", "pointers": sorted({pointer(e.absolute_path) for e in errors})}
    try:
        dump = model.model_validate(args).model_dump(mode="json")
    except ValidationError as e:
        return {"ok": False, "stage": "pydantic", "pointers": sorted({data_pointer(args, err["loc"]) for err in e.errors()})}
    except Exception as e:  # pydantic lets a few OverflowErrors escape
        return {"ok": False, "stage": "exception", "pointers": [""], "error": type(e).__name__}
    if not canonical_ok(dump):
        return {"ok": False, "stage": "canon", "pointers": [""]}
    return {"ok": True, "dump": dump}


def main():
    if sys.argv[1:] == ["schemas"]:
        out = {
            "claimed": {m.__name__: m.model_json_schema() for m in CLAIMED},
            "unsupported": {m.__name__: m.model_json_schema() for m in UNSUPPORTED},
        }
    elif sys.argv[1:] == ["run"]:
        cases = json.load(sys.stdin)
        validators = {name: jsonschema.Draft202012Validator(m.model_json_schema()) for name, m in MODELS.items()}
        out = {"results": [run_case(validators, c) for c in cases]}
    else:
        sys.exit("usage: oracle.py schemas | run < cases.json")
    json.dump(out, sys.stdout, ensure_ascii=False)


if __name__ == "__main__":
    main()
