"""The test command's scheduler (tests/scheduling.py), driven as xdist drives it, with workers that only record
what they are sent: the longest units go out first, one per worker, and a worker still busy with a long unit is
given the shortest unit waiting, never the next long one."""

from __future__ import annotations

from types import SimpleNamespace

from tests.scheduling import LongestFirstScheduling

SECONDS = {
    "gns3_a1": 480.0,
    "gns3_a7": 370.0,
    "mutants": 120.0,
    "packaging": 110.0,
    "tiny_1": 0.1,
    "tiny_2": 0.1,
    "tiny_3": 0.1,
}


class Worker:
    shutting_down = False

    def __init__(self, name: str) -> None:
        self.name, self.sent = name, []
        self.gateway = SimpleNamespace(id=name)

    def send_runtest_some(self, indexes: list[int]) -> None:
        self.sent.append(indexes)

    def shutdown(self) -> None:
        self.shutting_down = True


def scheduled(collection: list[str], workers: int) -> tuple[LongestFirstScheduling, list[Worker]]:
    options = SimpleNamespace(loadscopereorder=False)  # --no-loadscope-reorder, as tasks.py passes it
    config = SimpleNamespace(option=options, getvalue=lambda name: [f"{workers}*popen"] if name == "tx" else None)
    scheduler = LongestFirstScheduling(config, seconds=lambda nodeid: SECONDS[nodeid.split("::")[0]])
    nodes = [Worker(f"gw{n}") for n in range(workers)]
    for node in nodes:
        scheduler.add_node(node)
    for node in nodes:
        scheduler.add_node_collection(node, collection)
    scheduler.schedule()
    return scheduler, nodes


def units_sent(node: Worker, collection: list[str]) -> list[str]:
    return [collection[batch[0]].split("::")[0] for batch in node.sent]


def test_the_long_units_start_first_on_separate_workers_with_short_ones_behind_them():
    # tests/conftest.py sorts the collection longest first; each test here is a unit of its own
    collection = [f"{unit}::test" for unit in SECONDS]
    _, nodes = scheduled(collection, workers=3)
    first = [units_sent(node, collection)[0] for node in nodes]
    assert first == ["gns3_a1", "gns3_a7", "mutants"]
    behind = [units_sent(node, collection)[1] for node in nodes]
    assert set(behind) == {"tiny_1", "tiny_2", "tiny_3"}  # xdist's own would queue packaging behind gns3_a1


def test_a_worker_done_with_its_long_unit_takes_the_front_of_the_queue_again():
    collection = [f"{unit}::test" for unit in ("gns3_a1", "mutants", "gns3_a7", "tiny_1", "tiny_2", "tiny_3")]
    scheduler, nodes = scheduled(collection, workers=1)
    assert units_sent(nodes[0], collection) == ["gns3_a1", "tiny_3"]  # the shortest behind the long one
    scheduler.mark_test_complete(nodes[0], 0)  # gns3_a1 done: tiny_3 pending, 0.1 s ahead
    assert units_sent(nodes[0], collection)[-1] == "mutants"  # the longest waiting goes next
