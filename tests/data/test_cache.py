"""The data sets' cache folder: the environment variable wins, the folder is created."""

from transformer_lab.data.cache import cache_dir


def test_cache_dir_follows_the_environment_and_exists(tmp_path, monkeypatch):
    monkeypatch.setenv("TRANSFORMER_LAB_CACHE", str(tmp_path / "new" / "cache"))
    path = cache_dir()
    assert path == tmp_path / "new" / "cache" and path.is_dir()
    monkeypatch.delenv("TRANSFORMER_LAB_CACHE")
    assert cache_dir().name in ("cache", "transformer_lab") and cache_dir().is_dir()
