"""``python -m iolab.drivercore``: one line saying which driver core iolab runs here."""

from __future__ import annotations

from iolab.drivercore import missing, native


def main() -> None:
    module = native()
    if module is None:
        print(f"setup: the compiled driver core is {missing()}; iolab runs its Python drivers")
    else:
        libs = module.libraries()
        print(
            f"setup: the compiled driver core is built (libpq {libs['libpq']}, "
            f"libmariadb {libs['libmariadb']})"
        )


if __name__ == "__main__":
    main()
