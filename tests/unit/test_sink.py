"""The Elasticsearch sink: classification, 409 confirmation, bulk sizing, the adapter.

The port's contract (tests/contract) runs against the fake in tests/unit/test_search_contract.py
and against a real node in tests/integration/test_sink_es.py.
"""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from typing import Any, cast

import orjson
import pytest
from elastic_transport import ApiResponseMeta, HttpHeaders, NodeConfig
from elasticsearch import ApiError, ConnectionError, ConnectionTimeout
from hypothesis import given
from hypothesis import strategies as st
from searchsync.errors import Disposition, ErrorCode, TransientError
from searchsync.search.errors import status_code
from searchsync.search.es_index import BulkSizer, EsIndex
from searchsync.search.sink import IndexOp, ItemResult, OutcomeKind, Sink, WriteOutcome

from tests.contract.search_backend import FakeBackend, new_alias, op
from tests.fakes.search_index import InMemoryIndex

# -- classify ----------------------------------------------------------------------------------

DUMMY = IndexOp("a", "d", 1, b"{}")


def classify(result: ItemResult) -> ErrorCode | None:
    """What `Sink.write` makes of one item result (None: written; ES_409: a conflict to confirm)."""
    return None if 200 <= result.status < 300 else status_code(result.status, result.error_type)


@pytest.mark.parametrize(
    ("status", "error_type", "code"),
    [
        (200, None, None),
        (201, None, None),
        (409, "version_conflict_engine_exception", "ES_409"),
        (429, "es_rejected_execution_exception", "ES_429"),
        (429, "cluster_block_exception", "ES_BLOCKED"),
        (403, "cluster_block_exception", "ES_BLOCKED"),
        (500, "internal_server_error", "ES_5XX"),
        (503, "unavailable_shards_exception", "ES_5XX"),
        (0, "connection_error", "ES_UNAVAILABLE"),
        (0, "timeout", "ES_TIMEOUT"),
        (404, "index_not_found_exception", "ALIAS_MISSING"),
        (401, "security_exception", "ES_AUTH"),
        (413, None, "ES_TOO_LARGE"),
        (400, "mapper_parsing_exception", "MAPPING_ERROR"),
        (400, "document_parsing_exception", "MAPPING_ERROR"),
        (400, "strict_dynamic_mapping_exception", "MAPPING_ERROR"),
        (400, "illegal_argument_exception", "MAPPING_ERROR"),
        (400, "action_request_validation_exception", "ES_400"),
        (405, None, "ES_4XX"),
    ],
)
def test_classify(status: int, error_type: str | None, code: str | None) -> None:
    # The wire values: DLQ records, the state table and metrics labels carry these strings.
    found = classify(ItemResult(DUMMY, status, error_type, "why"))
    assert (None if found is None else found.value) == code


@given(st.integers(0, 999), st.none() | st.sampled_from(["x", "cluster_block_exception"]))
def test_classify_is_total_and_never_poisons_cluster_trouble(
    status: int, error_type: str | None
) -> None:
    code = classify(ItemResult(DUMMY, status, error_type, None))
    assert (code is None) == (200 <= status < 300)
    decided = 200 <= status < 300 or status == 409
    blocked = error_type == "cluster_block_exception" and not decided
    if blocked or status in (0, 404, 429) or status >= 500:
        assert code is not None and code.disposition is Disposition.SYSTEMIC


# -- the sink on the fake: injected failures and confirmation edge cases ----------------------


async def aliased_fake() -> tuple[InMemoryIndex, str]:
    backend = FakeBackend()
    return backend.fake, await new_alias(backend)


@pytest.mark.parametrize(
    ("status", "error_type", "kind", "code"),
    [
        (429, "es_rejected_execution_exception", OutcomeKind.FAILED, "ES_429"),
        (429, "cluster_block_exception", OutcomeKind.FAILED, "ES_BLOCKED"),
        (503, None, OutcomeKind.FAILED, "ES_5XX"),
        (0, "connection_error", OutcomeKind.FAILED, "ES_UNAVAILABLE"),
        (400, "mapper_parsing_exception", OutcomeKind.FAILED, "MAPPING_ERROR"),
    ],
)
async def test_injected_failure_is_reported_and_not_applied(
    status: int, error_type: str | None, kind: OutcomeKind, code: str
) -> None:
    fake, alias = await aliased_fake()
    fake.inject_failures(status, error_type, "scripted", doc_id="p1")
    first = await Sink(fake).write([op(alias, "p1", 1), op(alias, "p2", 1)])
    assert [(o.kind, o.code) for o in first] == [(kind, code), (OutcomeKind.APPLIED, None)]
    assert first[0].message is not None and "scripted" in first[0].message
    assert fake.get(alias, "p1") is None
    [second] = await Sink(fake).write([op(alias, "p1", 1)])
    assert second.kind is OutcomeKind.APPLIED


async def test_injected_failures_count_down() -> None:
    fake, alias = await aliased_fake()
    fake.inject_failures(429, times=2)
    outcomes = await Sink(fake).write([op(alias, f"p{i}", 1) for i in range(3)])
    assert [o.kind for o in outcomes] == [
        OutcomeKind.FAILED,
        OutcomeKind.FAILED,
        OutcomeKind.APPLIED,
    ]
    assert all(o.code and o.code.disposition is Disposition.SYSTEMIC for o in outcomes[:2])


class CountingIndex:
    """Wraps a fake to count and optionally break `get_versions`."""

    def __init__(self, inner: InMemoryIndex, versions: dict[str, int | None] | None = None) -> None:
        self.inner = inner
        self.versions = versions
        self.mget_calls: list[tuple[str, list[str]]] = []
        self.fail: TransientError | None = None

    async def bulk_index(self, ops: Sequence[IndexOp]) -> list[ItemResult]:
        return await self.inner.bulk_index(ops)

    async def get_versions(self, alias: str, ids: Sequence[str]) -> dict[str, int | None]:
        self.mget_calls.append((alias, list(ids)))
        if self.fail is not None:
            raise self.fail
        if self.versions is not None:
            return dict(self.versions)
        return await self.inner.get_versions(alias, ids)

    async def refresh(self, alias: str) -> None:
        await self.inner.refresh(alias)


async def test_conflicts_are_confirmed_with_one_mget_per_alias() -> None:
    fake, alias = await aliased_fake()
    await Sink(fake).write([op(alias, "a", 5), op(alias, "b", 5)])
    counting = CountingIndex(fake)
    outcomes = await Sink(counting).write([op(alias, "a", 5), op(alias, "b", 4), op(alias, "a", 5)])
    assert counting.mget_calls == [(alias, ["a", "b"])]
    assert [o.kind for o in outcomes] == [
        OutcomeKind.ALREADY_APPLIED,
        OutcomeKind.AHEAD,
        OutcomeKind.ALREADY_APPLIED,
    ]


async def test_no_mget_without_conflicts() -> None:
    fake, alias = await aliased_fake()
    counting = CountingIndex(fake)
    await Sink(counting).write([op(alias, "a", 1)])
    assert counting.mget_calls == []


async def test_failed_confirmation_is_retry_with_its_code() -> None:
    fake, alias = await aliased_fake()
    await Sink(fake).write([op(alias, "a", 5)])
    counting = CountingIndex(fake)
    counting.fail = TransientError(ErrorCode.ES_UNAVAILABLE, "down")
    [outcome] = await Sink(counting).write([op(alias, "a", 5)])
    assert (outcome.kind, outcome.code) == (OutcomeKind.FAILED, "ES_UNAVAILABLE")


@pytest.mark.parametrize("stored", [None, 4])
async def test_conflict_with_a_lower_or_absent_stored_version_is_retry(stored: int | None) -> None:
    fake, alias = await aliased_fake()
    await Sink(fake).write([op(alias, "a", 5)])
    [outcome] = await Sink(CountingIndex(fake, {"a": stored})).write([op(alias, "a", 5)])
    assert (outcome.kind, outcome.code) == (OutcomeKind.FAILED, "ES_409_UNCONFIRMED")
    assert outcome.stored_version == stored


async def test_an_adapter_losing_results_turns_into_retry() -> None:
    class Lossy(CountingIndex):
        async def bulk_index(self, ops: Sequence[IndexOp]) -> list[ItemResult]:
            return (await self.inner.bulk_index(ops))[:-1]

    fake, alias = await aliased_fake()
    outcomes = await Sink(Lossy(fake)).write([op(alias, "a", 1), op(alias, "b", 1)])
    assert [o.kind for o in outcomes] == [OutcomeKind.FAILED, OutcomeKind.FAILED]


async def test_empty_write_does_nothing() -> None:
    fake, _ = await aliased_fake()
    assert await Sink(fake).write([]) == []
    assert fake.bulk_calls == []


async def test_observer_sees_the_bulk_and_every_outcome() -> None:
    class Recorder:
        def __init__(self) -> None:
            self.bulks: list[tuple[int, float]] = []
            self.seen: list[WriteOutcome] = []

        def bulk_done(self, actions: int, seconds: float) -> None:
            self.bulks.append((actions, seconds))

        def outcomes(self, outcomes: Sequence[WriteOutcome]) -> None:
            self.seen.extend(outcomes)

    ticks = iter([10.0, 10.25])
    fake, alias = await aliased_fake()
    recorder = Recorder()
    sink = Sink(fake, observer=recorder, clock=lambda: next(ticks))
    outcomes = await sink.write([op(alias, "a", 1), op(alias, "b", 1)])
    assert recorder.bulks == [(2, 0.25)]
    assert recorder.seen == outcomes


def test_a_failed_outcome_takes_its_disposition_from_the_code_table() -> None:
    poison = WriteOutcome.failed(DUMMY, ErrorCode.MAPPING_ERROR, "bad")
    assert (poison.kind, _disposition(poison)) == (OutcomeKind.FAILED, Disposition.POISON)
    unconfirmed = WriteOutcome.failed(DUMMY, ErrorCode.ES_409_UNCONFIRMED, "409")
    assert (unconfirmed.kind, _disposition(unconfirmed)) == (
        OutcomeKind.FAILED,
        Disposition.TRANSIENT,
    )
    missing = WriteOutcome.failed(DUMMY, ErrorCode.ALIAS_MISSING, "no alias")
    assert (missing.kind, _disposition(missing)) == (OutcomeKind.FAILED, Disposition.SYSTEMIC)
    assert WriteOutcome(DUMMY, OutcomeKind.APPLIED).code is None


def _disposition(outcome: WriteOutcome) -> Disposition:
    assert outcome.code is not None
    return outcome.code.disposition


# -- BulkSizer ---------------------------------------------------------------------------------

sized_ops = st.lists(
    st.builds(
        IndexOp,
        alias=st.just("a"),
        doc_id=st.text("xyz", min_size=1, max_size=5),
        version=st.integers(1, 10**6),
        body_json=st.binary(max_size=300),
    ),
    max_size=40,
)


def op_bytes(op: IndexOp) -> int:
    """One op's NDJSON bytes: action line, body, two newlines."""
    return len(op.action_json()) + len(op.body_json) + 2


@given(sized_ops, st.integers(1, 10), st.integers(1, 2000))
def test_bulk_sizer_bounds_count_and_bytes_and_keeps_order(
    ops: list[IndexOp], max_actions: int, max_bytes: int
) -> None:
    sizer = BulkSizer(max_actions, max_bytes)
    chunks = [bulk.ops for bulk in sizer.encode(ops)]
    assert [o for chunk in chunks for o in chunk] == ops
    for chunk in chunks:
        assert 1 <= len(chunk) <= max_actions
        size = sum(op_bytes(o) for o in chunk)
        assert size <= max_bytes or len(chunk) == 1


@given(sized_ops, st.integers(1, 10), st.integers(1, 2000))
def test_encoded_bulks_are_the_sizers_chunks_as_ndjson(
    ops: list[IndexOp], max_actions: int, max_bytes: int
) -> None:
    bulks = list(BulkSizer(max_actions, max_bytes).encode(ops))
    for bulk in bulks:
        want = b"".join(o.action_json() + b"\n" + o.body_json + b"\n" for o in bulk.ops)
        assert bulk.body == want
        assert len(bulk.body) == sum(op_bytes(o) for o in bulk.ops)


def test_bulk_sizer_rejects_zero() -> None:
    with pytest.raises(ValueError):
        BulkSizer(0, 10)


# -- EsIndex over a stub client ----------------------------------------------------------------


def api_error(status: int, error_type: str | None) -> ApiError:
    meta = ApiResponseMeta(status, "1.1", HttpHeaders(), 0.0, NodeConfig("http", "localhost", 9200))
    body = {"error": {"type": error_type, "reason": "r"}, "status": status} if error_type else ""
    return ApiError(error_type or "error", meta, body)


class Response:
    def __init__(self, body: Any) -> None:
        self.body = body


class StubClient:
    """Records bulk/mget calls; answers from a script."""

    def __init__(self, bulk: list[Any], mget: Any = None) -> None:
        self.bulk_script = bulk
        self.mget_answer = mget
        self.bulk_calls: list[dict[str, Any]] = []
        self.mget_calls: list[dict[str, Any]] = []

    async def bulk(self, **kwargs: Any) -> Response:
        self.bulk_calls.append(kwargs)
        answer = self.bulk_script.pop(0)
        if isinstance(answer, Exception):
            raise answer
        return Response(answer)

    async def mget(self, **kwargs: Any) -> Response:
        self.mget_calls.append(kwargs)
        if isinstance(self.mget_answer, Exception):
            raise self.mget_answer
        return Response(self.mget_answer)


def es_index(client: StubClient, sizer: BulkSizer | None = None) -> EsIndex:
    return EsIndex(cast(Any, client), sizer=sizer)


async def test_es_index_sends_external_versions_through_the_alias() -> None:
    ops = [op("wiki", "p1", 3), op("wiki", "p2", 4)]
    items = [{"index": {"status": 201}}, {"index": {"status": 200}}]
    client = StubClient([{"items": items}])
    results = await es_index(client).bulk_index(ops)
    [call] = client.bulk_calls
    assert call["require_alias"] is True
    body = call["operations"]
    assert isinstance(body, bytes) and body.endswith(b"\n")  # one NDJSON body, encoded once
    lines = body.split(b"\n")[:-1]
    assert len(lines) == 4
    assert lines[1] == ops[0].body_json and lines[3] == ops[1].body_json
    assert orjson.loads(lines[2]) == {
        "index": {"_index": "wiki", "_id": "p2", "version": 4, "version_type": "external"}
    }
    assert not any(b'"delete"' in line for line in lines[::2])
    assert [r.status for r in results] == [201, 200]


async def test_only_an_explicit_option_turns_require_alias_off() -> None:
    client = StubClient([{"items": [{"index": {"status": 201}}]}])
    await EsIndex(cast(Any, client), require_alias=False).bulk_index([op("wiki_v2", "p1", 3)])
    assert client.bulk_calls[0]["require_alias"] is False


async def test_the_fake_writes_a_physical_index_only_through_its_physical_writer() -> None:
    from tests.fakes.search_index import InMemoryIndex

    fake = InMemoryIndex()
    fake.given_index("wiki_v2")
    [refused] = await fake.bulk_index([op("wiki_v2", "p1", 3)])
    assert refused.status == 404
    [written] = await fake.physical_writer().bulk_index([op("wiki_v2", "p1", 3)])
    assert written.status == 201 and fake.get("wiki_v2", "p1") is not None


async def test_es_index_parses_item_errors() -> None:
    ops = [op("wiki", "p1", 3), op("wiki", "p2", 4)]
    conflict = {"type": "version_conflict_engine_exception", "reason": "conflict"}
    items = [{"index": {"status": 409, "error": conflict}}, {"index": {"status": 201}}]
    results = await es_index(StubClient([{"errors": True, "items": items}])).bulk_index(ops)
    assert [(r.status, r.error_type) for r in results] == [
        (409, "version_conflict_engine_exception"),
        (201, None),
    ]


@pytest.mark.parametrize(
    ("failure", "code"),
    [
        (ConnectionError("refused"), "ES_UNAVAILABLE"),
        (ConnectionTimeout("slow"), "ES_TIMEOUT"),
        (api_error(429, "es_rejected_execution_exception"), "ES_429"),
        (api_error(429, "cluster_block_exception"), "ES_BLOCKED"),
        (api_error(503, None), "ES_5XX"),
        (api_error(404, "index_not_found_exception"), "ALIAS_MISSING"),
    ],
)
async def test_es_index_turns_a_failed_request_into_per_item_results(
    failure: Exception, code: str
) -> None:
    ops = [op("wiki", "p1", 1), op("wiki", "p2", 1), op("wiki", "p3", 1)]
    answers = [failure, {"items": [{"index": {"status": 201}}]}]
    client = StubClient(answers)
    sink = Sink(es_index(client, BulkSizer(max_actions=2)))
    outcomes = await sink.write(ops)
    assert len(client.bulk_calls) == 2
    assert [(o.kind, o.code) for o in outcomes] == [
        (OutcomeKind.FAILED, code),
        (OutcomeKind.FAILED, code),
        (OutcomeKind.APPLIED, None),
    ]


class PacedClient:
    """Answers each bulk after a few turns of the event loop, as a socket would, counting the
    requests in flight; `hold` (when set) keeps every request waiting until it is set."""

    def __init__(self, hold: asyncio.Event | None = None) -> None:
        self.sent: list[list[str]] = []
        self.in_flight = 0
        self.most_in_flight = 0
        self.cancelled = 0
        self.hold = hold
        self.started = asyncio.Event()

    async def bulk(self, **kwargs: Any) -> Response:
        lines = kwargs["operations"].split(b"\n")[:-1]
        ids = [orjson.loads(a)["index"]["_id"] for a in lines[::2]]
        self.sent.append(ids)
        self.started.set()
        self.in_flight += 1
        self.most_in_flight = max(self.most_in_flight, self.in_flight)
        try:
            for _ in range(3):
                await asyncio.sleep(0)
            if self.hold is not None:
                await self.hold.wait()
        except asyncio.CancelledError:
            self.cancelled += 1
            raise
        finally:
            self.in_flight -= 1
        status = 400 if "p4" in ids else 201  # one bulk of them refused item by item
        return Response({"items": [{"index": {"status": status}} for _ in ids]})


async def test_es_index_sends_the_bulks_of_a_batch_one_at_a_time_in_order() -> None:
    ops = [op("wiki", f"p{n}", 1) for n in range(11)]
    client = PacedClient()
    results = await EsIndex(cast(Any, client), sizer=BulkSizer(max_actions=2)).bulk_index(ops)
    assert client.most_in_flight == 1
    assert client.sent == [[o.doc_id for o in ops[i : i + 2]] for i in range(0, 11, 2)]
    assert [r.op for r in results] == ops
    assert [r.status for r in results] == [201] * 4 + [400, 400] + [201] * 5


async def test_cancelling_a_batch_cancels_its_request_in_flight() -> None:
    client = PacedClient(hold=asyncio.Event())
    index = EsIndex(cast(Any, client), sizer=BulkSizer(max_actions=2))
    writing = asyncio.ensure_future(index.bulk_index([op("wiki", f"p{n}", 1) for n in range(6)]))
    await asyncio.wait_for(client.started.wait(), 5)
    writing.cancel()
    with pytest.raises(asyncio.CancelledError):
        await writing
    assert client.cancelled == 1 and client.in_flight == 0 and len(client.sent) == 1


async def test_es_index_treats_a_malformed_response_as_no_response() -> None:
    results = await es_index(StubClient([{"items": []}])).bulk_index([op("wiki", "p1", 1)])
    assert classify(results[0]) is ErrorCode.ES_UNAVAILABLE


async def test_es_index_get_versions() -> None:
    docs = [{"_id": "a", "found": True, "_version": 9}, {"_id": "b", "found": False}]
    client = StubClient([], {"docs": docs})
    assert await es_index(client).get_versions("wiki", ["a", "b", "a"]) == {"a": 9, "b": None}
    [call] = client.mget_calls
    assert call["ids"] == ["a", "b"] and call["index"] == "wiki" and call["realtime"] is True


@pytest.mark.parametrize(
    ("answer", "code"),
    [
        (api_error(404, "index_not_found_exception"), "ALIAS_MISSING"),
        (ConnectionError("refused"), "ES_UNAVAILABLE"),
        ({"docs": [{"_id": "a", "error": {"type": "index_not_found_exception"}}]}, "ALIAS_MISSING"),
        ({"docs": [{"_id": "a", "error": {"type": "shard_failure"}}]}, "ES_MGET"),
        (api_error(503, None), "ES_5XX"),  # the cluster's trouble: systemic, as for a bulk
        (api_error(429, "es_rejected_execution_exception"), "ES_429"),
        (api_error(400, "illegal_argument_exception"), "ES_MGET"),  # no document was refused
    ],
)
async def test_es_index_get_versions_failures_are_transient(answer: Any, code: str) -> None:
    with pytest.raises(TransientError) as info:
        await es_index(StubClient([], answer)).get_versions("wiki", ["a"])
    assert info.value.code == code
