"""The finite model check, run through the real OffsetLedger and Coalescer.

See docs/design.md, "The offset ledger and its model check".

A short outbox history of a few keys is produced into Kafka while a consumer polls it in any
batching, coalesces it by key, re-reads the truth, writes an Elasticsearch model with external
versions and commits the ledger's offsets, with works finishing in any order, failing and being
retried, and the process crashing at any point. A crash loses every in-memory thing (ledger,
coalescer, works) and keeps only the committed offsets and Elasticsearch; requests the dead
process already sent may still land later. The consumer then restarts from the committed offsets.

For every schedule the checker asserts:

* coverage: a committed offset never passes an event whose effect Elasticsearch does not hold,
  and never passes an offset the consumer had not finished
  (skipped events lie within the covered ones);
* convergence: at quiescence Elasticsearch equals a crash-free run, every key at its last revision;
* no regression: a write never lowers a document, and a 409 is only accepted when the stored
  version really is at least the one read.

A deliberately broken ledger (commit = highest finished offset + 1) must produce a counterexample,
which proves the check can fail.
"""

from __future__ import annotations

import enum
import random
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from functools import partial
from typing import Protocol

from searchsync.stream.coalesce import Coalescer
from searchsync.stream.ledger import OffsetLedger, PartitionLedger
from searchsync.stream.work import Work
from searchsync.types import Operation, RawMessage, ThinEvent, TopicPartition

TOPIC = "outbox.event.wiki_page"


# --- the history ---------------------------------------------------------------------------


@dataclass(frozen=True)
class Change:
    """One committed MySQL transaction: a row change and its outbox event."""

    key: str
    revision: int
    deleted: bool
    partition: int
    offset: int

    def event(self) -> ThinEvent:
        op = Operation.TOMBSTONE if self.deleted else Operation.UPSERT
        return ThinEvent(f"{self.key}-{self.revision}", "wiki_page", self.key, op, self.revision)

    @property
    def position(self) -> RawMessage:
        return RawMessage(TOPIC, self.partition, self.offset)


def history(spec: str, partitions: dict[str, int]) -> list[Change]:
    """Build a history from e.g. "a b a -a b": a key per change, `-` marks a delete."""
    revision: dict[str, int] = {}
    offsets: dict[int, int] = {}
    out = []
    for token in spec.split():
        deleted = token.startswith("-")
        key = token.lstrip("-")
        revision[key] = revision.get(key, 0) + 1
        partition = partitions[key]
        offset = offsets.get(partition, 0)
        offsets[partition] = offset + 1
        out.append(Change(key, revision[key], deleted, partition, offset))
    return out


# --- the durable world: Elasticsearch, the committed offsets, the truth --------------------


class ElasticsearchModel:
    """Documents with external versions: a write at a version <= the stored one is a 409."""

    def __init__(self) -> None:
        self.docs: dict[str, tuple[int, bool]] = {}

    def version(self, key: str) -> int:
        doc = self.docs.get(key)
        return 0 if doc is None else doc[0]

    def index(self, key: str, version: int, deleted: bool) -> bool:
        if version <= self.version(key):
            return False  # 409 version conflict: the document is never lowered
        self.docs[key] = (version, deleted)
        return True


class Violation(Exception):
    """A property of the protocol failed in this schedule."""


class Ledger(Protocol):
    def track(self, pos: RawMessage) -> None: ...
    def finish(self, pos: RawMessage) -> bool: ...
    def to_commit(self) -> dict[TopicPartition, int]: ...
    def mark_committed(self, tp: TopicPartition, offset: int) -> None: ...


class MaxFinishedLedger:
    """The broken variant the contract warns about: commit the highest finished offset + 1."""

    def __init__(self) -> None:
        self._max: dict[TopicPartition, int] = {}
        self._committed: dict[TopicPartition, int] = {}

    def track(self, pos: RawMessage) -> None:
        pass

    def finish(self, pos: RawMessage) -> bool:
        tp = (pos.topic, pos.partition)
        self._max[tp] = max(self._max.get(tp, -1), pos.offset)
        return True

    def to_commit(self) -> dict[TopicPartition, int]:
        return {
            tp: top + 1 for tp, top in self._max.items() if top + 1 > self._committed.get(tp, -1)
        }

    def mark_committed(self, tp: TopicPartition, offset: int) -> None:
        self._committed[tp] = offset


class Phase(enum.Enum):
    STARTED = "started"  # taken from the coalescer, truth not read yet
    READ = "read"  # truth read; the write carries the revision read
    WRITTEN = "written"  # Elasticsearch answered; not yet completed in coalescer + ledger


@dataclass
class InFlight:
    work: Work
    phase: Phase = Phase.STARTED
    read: tuple[int, bool] = (0, False)


@dataclass
class Consumer:
    """Everything a crash loses."""

    ledger: Ledger
    coalescer: Coalescer
    next_offset: dict[int, int]
    start_offset: dict[int, int]
    in_flight: list[InFlight] = field(default_factory=list)
    finished: set[RawMessage] = field(default_factory=set)


@dataclass
class Stats:
    schedules: int = 0
    crashes: int = 0
    conflicts: int = 0
    coalesced: int = 0
    releases: int = 0
    zombie_writes: int = 0
    commits: int = 0


Chooser = Callable[[int], int]


class Run:
    """One schedule: every nondeterministic step is asked of `choose`."""

    def __init__(
        self,
        changes: list[Change],
        make_ledger: Callable[[], Ledger],
        choose: Chooser,
        stats: Stats,
        crashes: int,
        releases: int,
        max_in_flight: int = 2,
        max_queued: int = 3,
        coarse: bool = False,
    ) -> None:
        self.changes = changes
        self.make_ledger = make_ledger
        self.choose = choose
        self.stats = stats
        self.crashes_left = crashes
        self.releases_left = releases
        self.max_in_flight = max_in_flight
        self.max_queued = max_queued
        # Coarse runs shrink the tree for exhaustive enumeration: the history is produced up
        # front, ready works start as soon as there is room, read + write is one step, and the
        # ledger is committed after every completion.
        self.coarse = coarse
        self.partitions = sorted({c.partition for c in changes})
        self.by_position = {c.position: c for c in changes}
        self.produced = len(changes) if coarse else 0
        self.es = ElasticsearchModel()
        self.committed: dict[int, int] = {}
        self.zombies: list[tuple[str, int, bool]] = []  # writes sent by a dead process
        self.consumer = self._start_consumer()

    # -- the truth: the latest produced change of a key (MySQL commits before Kafka sees it)
    def truth(self, key: str) -> tuple[int, bool]:
        row = (0, False)
        for change in self.changes[: self.produced]:
            if change.key == key:
                row = (change.revision, change.deleted)
        return row

    def _start_consumer(self) -> Consumer:
        start = {p: self.committed.get(p, 0) for p in self.partitions}
        return Consumer(
            ledger=self.make_ledger(),
            coalescer=Coalescer(self.max_in_flight, self.max_queued),
            next_offset=dict(start),
            start_offset=dict(start),
        )

    def _available(self, partition: int) -> list[Change]:
        offset = self.consumer.next_offset[partition]
        return [
            c
            for c in self.changes[: self.produced]
            if c.partition == partition and c.offset >= offset
        ]

    def actions(self) -> tuple[list[Callable[[], None]], list[Callable[[], None]]]:
        """Progress actions (each moves the run forward) and disturbances (bounded)."""
        c = self.consumer
        progress: list[Callable[[], None]] = []
        disturb: list[Callable[[], None]] = []
        if self.produced < len(self.changes):
            progress.append(self._produce)
        if not c.coalescer.is_full():
            for partition in self.partitions:
                available = self._available(partition)
                for size in range(1, len(available) + 1):
                    progress.append(partial(self._poll, available[:size]))
        if self._can_start():
            progress.append(self._start)
        for item in c.in_flight:
            progress.append(partial(self._advance, item))
            if self.releases_left:
                disturb.append(partial(self._release, item))
        if c.ledger.to_commit() and not self.coarse:
            progress.append(self._commit)
        for i in range(len(self.zombies)):
            disturb.append(partial(self._zombie_write, i))
        if self.crashes_left:
            disturb.append(self._crash)
        return progress, disturb

    def execute(self) -> None:
        while True:
            if self.coarse:
                while self._can_start():
                    self._start()
            progress, disturb = self.actions()
            if not progress:
                break
            options = progress + disturb
            options[self.choose(len(options))]()
        # Late writes of a dead process may still land after everything settled.
        for i in reversed(range(len(self.zombies))):
            self._zombie_write(i)
        self._check_final()

    def _can_start(self) -> bool:
        c = self.consumer.coalescer
        return c.ready() > 0 and c.in_flight() < self.max_in_flight

    # -- steps
    def _produce(self) -> None:
        self.produced += 1

    def _poll(self, batch: list[Change]) -> None:
        c = self.consumer
        for change in batch:
            c.ledger.track(change.position)
            c.coalescer.add(change.event(), change.position)
        c.next_offset[batch[0].partition] = batch[-1].offset + 1

    def _start(self) -> None:
        c = self.consumer
        (work,) = c.coalescer.take_ready(limit=1)
        if len(work.events) > 1:
            self.stats.coalesced += 1
        c.in_flight.append(InFlight(work))

    def _advance(self, item: InFlight) -> None:
        c = self.consumer
        key = item.work.key.aggregate_id
        if item.phase is Phase.STARTED:
            item.read = self.truth(key)
            if item.read[0] < item.work.max_revision:
                raise Violation(f"truth {item.read} older than event {item.work.max_revision}")
            item.phase = Phase.READ
            if self.coarse:
                self._advance(item)
        elif item.phase is Phase.READ:
            version, deleted = item.read
            if not self.es.index(key, version, deleted):
                self.stats.conflicts += 1
                if self.es.version(key) < version:  # a 409 must be confirmed, never ignored
                    raise Violation(f"409 for {key}@{version} but ES holds less")
            item.phase = Phase.WRITTEN
        else:
            c.in_flight.remove(item)
            for pos in c.coalescer.complete(item.work):
                c.ledger.finish(pos)
                c.finished.add(pos)
            if self.coarse:
                self._commit()

    def _release(self, item: InFlight) -> None:
        self.releases_left -= 1
        self.stats.releases += 1
        c = self.consumer
        c.in_flight.remove(item)
        if item.phase is Phase.READ:
            # The request timed out on our side; Elasticsearch may still apply it later.
            self.zombies.append((item.work.key.aggregate_id, *item.read))
        c.coalescer.release(item.work)

    def _commit(self) -> None:
        c = self.consumer
        self.stats.commits += 1
        for (_topic, partition), offset in c.ledger.to_commit().items():
            for off in range(c.start_offset[partition], offset):
                pos = RawMessage(TOPIC, partition, off)
                if pos not in c.finished:
                    raise Violation(f"commit {partition}:{offset} passes unfinished offset {off}")
                change = self.by_position[pos]
                if self.es.version(change.key) < change.revision:
                    raise Violation(
                        f"commit {partition}:{offset} passes {change.key}@{change.revision}, "
                        f"which Elasticsearch does not cover"
                    )
            if offset < self.committed.get(partition, 0):
                raise Violation(f"commit of partition {partition} went back to {offset}")
            self.committed[partition] = offset
            c.ledger.mark_committed((TOPIC, partition), offset)

    def _crash(self) -> None:
        self.crashes_left -= 1
        self.stats.crashes += 1
        for item in self.consumer.in_flight:
            if item.phase is Phase.READ:  # requests already on the wire may still land
                self.zombies.append((item.work.key.aggregate_id, *item.read))
        self.consumer = self._start_consumer()

    def _zombie_write(self, i: int) -> None:
        key, version, deleted = self.zombies.pop(i)
        before = self.es.version(key)
        if self.es.index(key, version, deleted):
            self.stats.zombie_writes += 1
        if self.es.version(key) < before:
            raise Violation(f"a late write lowered {key}")

    def _check_final(self) -> None:
        expected = {}
        for change in self.changes:
            expected[change.key] = (change.revision, change.deleted)
        if self.es.docs != expected:
            raise Violation(f"final state {self.es.docs} != crash-free {expected}")
        for partition in self.partitions:
            last = max(c.offset for c in self.changes if c.partition == partition)
            if self.committed.get(partition, 0) != last + 1:
                raise Violation(f"partition {partition} ends committed at {self.committed}")


# --- exploring schedules ---------------------------------------------------------------------


class Trail:
    """Answers choices from a forced prefix, then with 0 (exhaustive) or a seeded rng."""

    def __init__(self, prefix: list[int], rng: random.Random | None = None) -> None:
        self.prefix = prefix
        self.rng = rng
        self.taken: list[tuple[int, int]] = []

    def __call__(self, n: int) -> int:
        if n == 1:
            return 0
        i = len(self.taken)
        if i < len(self.prefix):
            choice = self.prefix[i]
        elif self.rng is not None:
            choice = self.rng.randrange(n)
        else:
            choice = 0
        self.taken.append((choice, n))
        return choice


def exhaustive(limit: int) -> Iterator[Trail]:
    """Every choice sequence, depth first (stateless model checking by replay)."""
    prefix: list[int] = []
    for _ in range(limit):
        trail = Trail(prefix)
        yield trail
        taken = trail.taken
        while taken and taken[-1][0] + 1 >= taken[-1][1]:
            taken.pop()
        if not taken:
            return
        prefix = [choice for choice, _ in taken[:-1]] + [taken[-1][0] + 1]


def sampled(count: int, seed: int) -> Iterator[Trail]:
    rng = random.Random(seed)
    for _ in range(count):
        yield Trail([], rng)


@dataclass
class Outcome:
    stats: Stats
    counterexample: tuple[str, list[tuple[int, int]]] | None = None
    exhausted: bool = False


def check(
    changes: list[Change],
    make_ledger: Callable[[], Ledger],
    trails: Iterator[Trail],
    crashes: int,
    releases: int,
    coarse: bool = False,
) -> Outcome:
    stats = Stats()
    for trail in trails:
        stats.schedules += 1
        run = Run(changes, make_ledger, trail, stats, crashes, releases, coarse=coarse)
        try:
            run.execute()
        except Violation as violation:
            return Outcome(stats, (str(violation), trail.taken))
    return Outcome(stats)


# The seed's own example (a1, b1, a2 in one shared log) plus a delete and a restore.
SEED_LOG = history("a b a -a a", {"a": 0, "b": 0})
# Two partitions, three keys, a delete: partitions finish independently.
TWO_PARTITIONS = history("a b c a -b c a b", {"a": 0, "b": 1, "c": 0})


def test_every_schedule_of_the_seed_example_converges() -> None:
    """All batchings, completion orders and crash points of a1 b1 a2 (the first example)."""
    changes = history("a b a", {"a": 0, "b": 0})
    outcome = check(
        changes, OffsetLedger, exhaustive(limit=100_000), crashes=1, releases=0, coarse=True
    )
    assert outcome.counterexample is None, outcome.counterexample
    assert 5_000 <= outcome.stats.schedules < 100_000, "the enumeration must be complete"
    # The enumeration really reaches the interesting corners.
    assert outcome.stats.crashes > 0
    assert outcome.stats.conflicts > 0, "replays after a crash meet 409s"
    assert outcome.stats.coalesced > 0


def test_every_schedule_with_a_crash_and_a_retry_converges() -> None:
    changes = history("a b", {"a": 0, "b": 0})
    outcome = check(
        changes, OffsetLedger, exhaustive(limit=100_000), crashes=1, releases=1, coarse=True
    )
    assert outcome.counterexample is None, outcome.counterexample
    assert 5_000 <= outcome.stats.schedules < 100_000
    assert outcome.stats.crashes > 0
    assert outcome.stats.releases > 0


def test_sampled_fine_grained_schedules_converge() -> None:
    """Production interleaved with reads, lagging commits, late writes of a dead process."""
    for changes, seed in ((SEED_LOG, 1), (TWO_PARTITIONS, 2)):
        outcome = check(changes, OffsetLedger, sampled(1_500, seed), crashes=2, releases=2)
        assert outcome.counterexample is None, outcome.counterexample
        assert outcome.stats.schedules == 1_500
        assert outcome.stats.crashes > 0
        assert outcome.stats.conflicts > 0
        assert outcome.stats.coalesced > 0
        assert outcome.stats.releases > 0
        assert outcome.stats.zombie_writes > 0


def test_the_broken_ledger_is_caught() -> None:
    """Commit = max finished offset: the checker must find a schedule that passes an event."""
    changes = history("a b a", {"a": 0, "b": 0})
    outcome = check(
        changes, MaxFinishedLedger, exhaustive(limit=100_000), crashes=1, releases=0, coarse=True
    )
    assert outcome.counterexample is not None
    message, trail = outcome.counterexample
    assert "passes unfinished offset" in message
    assert trail, "the counterexample names its schedule"


def test_the_broken_ledger_is_caught_when_sampling_too() -> None:
    outcome = check(SEED_LOG, MaxFinishedLedger, sampled(1_500, 3), crashes=2, releases=2)
    assert outcome.counterexample is not None


def test_the_broken_ledger_loses_data_after_a_crash() -> None:
    """Without the commit-time check, the same bug shows up as a wrong final state."""

    class Unchecked(Run):
        def _commit(self) -> None:
            c = self.consumer
            for (_topic, partition), offset in c.ledger.to_commit().items():
                self.committed[partition] = offset
                c.ledger.mark_committed((TOPIC, partition), offset)

    changes = history("a b", {"a": 0, "b": 0})
    found = None
    for trail in exhaustive(limit=100_000):
        run = Unchecked(changes, MaxFinishedLedger, trail, Stats(), 1, 0, coarse=True)
        try:
            run.execute()
        except Violation as violation:
            found = str(violation)
            break
    assert found is not None
    assert "final state" in found


def test_partition_ledger_matches_the_model_on_a_gap() -> None:
    """The model uses dense offsets; the ledger also skips the gaps Kafka leaves."""
    ledger = PartitionLedger()
    for offset in (0, 2, 5):
        ledger.track(offset)
    ledger.finish(2)
    ledger.finish(5)
    assert ledger.committable() == 0
    ledger.finish(0)
    assert ledger.committable() == 6
