from ragline.store.tenants import SqliteTenantStore as TenantStore
from ragline.store.tenants import hash_key


def test_create_returns_a_key_that_resolves_to_the_tenant(db):
    store = TenantStore(db)
    tenant, key = store.create("acme")
    assert key.startswith("rl-")
    found = store.for_key(key)
    assert found == tenant
    assert found.name == "acme"


def test_wrong_or_empty_key_resolves_to_none(db):
    store = TenantStore(db)
    _, key = store.create("acme")
    assert store.for_key(key + "x") is None
    assert store.for_key(key.upper()) is None
    assert store.for_key("") is None
    assert store.for_key("rl-unknown") is None


def test_keys_are_distinct_per_tenant(db):
    store = TenantStore(db)
    a, key_a = store.create("a")
    b, key_b = store.create("b")
    assert key_a != key_b
    assert store.for_key(key_a) == a
    assert store.for_key(key_b) == b


def test_explicit_key_and_extra_keys(db):
    store = TenantStore(db)
    tenant, key = store.create("acme", api_key="my-fixed-key")
    assert key == "my-fixed-key"
    assert store.for_key("my-fixed-key") == tenant
    store.add_key(tenant.id, "second-key")
    store.add_key(tenant.id, "second-key")  # idempotent
    assert store.for_key("second-key") == tenant
    assert store.for_key("my-fixed-key") == tenant


def test_key_is_stored_only_as_hash(db):
    store = TenantStore(db)
    _, key = store.create("acme")
    rows = db.query("SELECT key_hash FROM api_keys")
    assert [row["key_hash"] for row in rows] == [hash_key(key)]
    assert all(key not in row["key_hash"] for row in rows)


def test_by_name_and_list(db):
    store = TenantStore(db)
    a, _ = store.create("alpha")
    b, _ = store.create("beta")
    assert store.by_name("beta") == b
    assert store.by_name("gamma") is None
    assert {t.id for t in store.list()} == {a.id, b.id}
