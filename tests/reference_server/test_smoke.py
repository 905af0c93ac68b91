import pytest

pytestmark = pytest.mark.anyio


async def test_plain_turn(lab):
    stream = await lab.stream("hello [[fake-llm:plain]]")
    assert stream.status == 200 and stream.types[-1] == "done"


async def test_real_process(server_process):
    import httpx

    from tests.reference_server.conftest import Lab

    async with httpx.AsyncClient(base_url=server_process.base_url) as client:
        lab = await Lab(client).setup()
        stream = await lab.stream("hi [[fake-llm:plain]]")
        assert stream.types[-1] == "done"
