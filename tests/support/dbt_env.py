"""dbt as its users install it, in a virtual environment of its own: dbt's pins (protobuf,
agate, ...) must not meet the test environment's pyspark / Connect client dependencies.

Created once under ``~/.cache/sparklock/venvs/dbt-<dbt-core version>`` (pip's cache makes a
re-creation cheap) and reused; a stamp file records what was installed, so a change of the pins
below re-installs. dbt-core 1.12.x needs a build step that downloads from the internet, so the
pins stay on the 1.11 line, which installs from wheels and sdists with nothing to compile.
"""

from __future__ import annotations

import fcntl
import os
import subprocess
import sys
from pathlib import Path

DBT_CORE = "1.11.16"
DBT_SPARK = "1.11.0"
REQUIREMENTS = (f"dbt-core=={DBT_CORE}", f"dbt-spark[PyHive]=={DBT_SPARK}")
CACHE = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "sparklock"


def venv_root() -> Path:
    env = os.environ.get("SPARKLOCK_VENVS")
    return (Path(env) if env else CACHE / "venvs") / f"dbt-{DBT_CORE}"


def dbt_venv() -> Path:
    """The venv with dbt installed (created on first use; another process may be creating it:
    the lock file makes it wait rather than race)."""
    root = venv_root()
    root.parent.mkdir(parents=True, exist_ok=True)
    stamp = root / ".sparklock-dbt"
    wanted = " ".join(REQUIREMENTS)
    with open(root.parent / f".dbt-{DBT_CORE}.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if stamp.exists() and stamp.read_text().strip() == wanted:
            return root
        python = root / "bin" / "python"
        if not python.exists():
            subprocess.run([sys.executable, "-m", "venv", str(root)], check=True)
        cmd = [str(python), "-m", "pip", "install", "-q", "--disable-pip-version-check"]
        print("+", " ".join([*cmd, *REQUIREMENTS]), file=sys.stderr, flush=True)
        subprocess.run([*cmd, *REQUIREMENTS], check=True)
        stamp.write_text(wanted + "\n")
    return root


def dbt_executable() -> Path:
    return dbt_venv() / "bin" / "dbt"


if __name__ == "__main__":  # python3 -m tests.support.dbt_env: create the venv ahead of a run
    print(dbt_executable())
