import pytest

pytest.importorskip("fastapi")
from fastapi.testclient import TestClient  # noqa: E402

from zstc.api import Classifier  # noqa: E402
from zstc.server.app import create_app  # noqa: E402


@pytest.fixture(scope="module")
def client():
    return TestClient(create_app(Classifier("sentence-transformers/all-MiniLM-L6-v2", precision="fp32")))


def test_classify_endpoint(client):
    response = client.post("/classify", json={"texts": ["The striker scored twice."], "labels": ["sports", "economy"], "template": "This text is about {}."})
    assert response.status_code == 200
    (prediction,) = response.json()
    assert prediction["label"] == "sports" and set(prediction["scores"]) == {"sports", "economy"}
    assert client.get("/health").json()["model"] == "sentence-transformers/all-MiniLM-L6-v2"


@pytest.mark.parametrize("payload, message", [
    ({"texts": ["x"], "labels": ["only"]}, "only one label"),
    ({"texts": ["x"], "labels": ["a", "a"]}, "duplicate labels"),
    ({"texts": [""], "labels": ["a", "b"]}, "text 1 is empty"),
])
def test_bad_requests_get_the_same_messages_as_the_cli(client, payload, message):
    response = client.post("/classify", json=payload)
    assert response.status_code == 422 and message in response.json()["detail"]
