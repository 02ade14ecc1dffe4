import boto3
import pytest
from botocore.exceptions import ClientError
from moto import mock_aws

from ragline.tables.s3 import S3TableStore
from ragline.tables.store import FileTableStore, InMemoryTableStore, TableNotFound, checked_id
from tests.unit.ragline.moto_env import FAKE_ENVIRONMENT, REGION

DOCUMENT_ID = "0b7c5a1e-2f4d-4c11-9a0e-1234567890ab"
CSV = b"a,b\n1,2\n"
BUCKET = "ragline-tables-unit"


@pytest.fixture
def s3_store(monkeypatch):
    for name, value in FAKE_ENVIRONMENT.items():
        monkeypatch.setenv(name, value)
    monkeypatch.delenv("AWS_ENDPOINT_URL", raising=False)
    with mock_aws():
        client = boto3.client("s3", region_name=REGION)
        client.create_bucket(Bucket=BUCKET)
        yield S3TableStore(client, BUCKET, prefix="tables/"), client


@pytest.fixture(params=["memory", "file", "s3"])
def store(request, tmp_path):
    if request.param == "memory":
        return InMemoryTableStore()
    if request.param == "file":
        return FileTableStore(tmp_path / "tables")
    return request.getfixturevalue("s3_store")[0]


def test_save_load_delete(store):
    store.save(DOCUMENT_ID, CSV)
    assert store.load(DOCUMENT_ID) == CSV
    store.save(DOCUMENT_ID, b"x\n1\n")  # saving again replaces
    assert store.load(DOCUMENT_ID) == b"x\n1\n"
    store.delete(DOCUMENT_ID)
    with pytest.raises(TableNotFound):
        store.load(DOCUMENT_ID)
    store.delete(DOCUMENT_ID)  # deleting what is gone is fine


def test_missing_table_is_table_not_found(store):
    with pytest.raises(TableNotFound):
        store.load(DOCUMENT_ID)


@pytest.mark.parametrize("bad_id", ["../etc/passwd", "a/b", "", ".hidden", "a b", "x" * 200, "id\x00"])
def test_ids_that_could_name_another_path_are_refused(store, bad_id):
    with pytest.raises(ValueError, match="not a valid document id"):
        store.save(bad_id, CSV)
    with pytest.raises(ValueError, match="not a valid document id"):
        store.load(bad_id)


def test_checked_id_accepts_uuids():
    assert checked_id(DOCUMENT_ID) == DOCUMENT_ID


def test_file_store_writes_one_csv_per_document_and_no_temporary_files(tmp_path):
    root = tmp_path / "data" / "tables"
    store = FileTableStore(root)
    store.save(DOCUMENT_ID, CSV)
    assert sorted(p.name for p in root.iterdir()) == [f"{DOCUMENT_ID}.csv"]
    assert (root / f"{DOCUMENT_ID}.csv").read_bytes() == CSV


def test_s3_store_key_and_content_type(s3_store):
    store, client = s3_store
    store.save(DOCUMENT_ID, CSV)
    head = client.head_object(Bucket=BUCKET, Key=f"tables/{DOCUMENT_ID}.csv")
    assert head["ContentType"].startswith("text/csv")


def test_s3_errors_other_than_missing_are_raised(s3_store):
    _, client = s3_store
    other = S3TableStore(client, "no-such-bucket")
    with pytest.raises(ClientError) as raised:
        other.load(DOCUMENT_ID)
    assert not isinstance(raised.value, TableNotFound)
