"""``iolab serve``: a local, read-only web application over the results database.

:mod:`iolab.serve.app` wires the routes (Starlette), :mod:`iolab.serve.pages` writes the pages
from the report library's values and HTML pieces (no statistics or charts of its own), and
:mod:`iolab.serve.access` guards a server bound beyond loopback with a one-time token.
"""
