"""The web application: routes over the results database, opened read-only per request.

    /                        experiments, filtered by ?workload= &engine= &device= &host=
                             &since= &until= (days as YYYY-MM-DD)
    /experiments/ID          the experiment's report (``iolab report --html``'s page) + its runs
    /runs/ID                 a run: parameters, environment, devices, counters, timeline,
                             waits, checkpoints, server log; live while it runs
    /runs/ID/timeline.json   the run's timeline figure so far, its number of points, and its
                             waits and checkpoints so far (HTML)
    /runs/ID/figure.json     the run's timeline figure as the report draws it (?title=): the
                             experiment page fetches each as it nears the screen
    /compare?a=&b=&metric=   ``iolab compare``'s answer with charts
    /static/NAME             the pages' scripts: plotly.min.js (Plotly's JavaScript from the
                             installed package), timelines.js, save.js, live.js

Every page runs only scripts this server sends as files (the policy allows no inline script and
no eval: data sits in ``<script type="application/json">`` blocks); every id that names no run
or experiment, however large, is a 404, and no route raises.

Every request opens the database with SQLite's ``mode=ro`` and closes it: nothing is ever
written, and runs another process records are read as far as it has committed. Endpoints are
plain functions; Starlette runs them in its thread pool.
"""

from __future__ import annotations

import json
import threading
from collections import OrderedDict
from collections.abc import Callable
from datetime import datetime
from pathlib import Path
from urllib.parse import urlencode

from starlette.applications import Starlette
from starlette.convertors import Convertor, register_url_convertor
from starlette.exceptions import HTTPException
from starlette.requests import Request
from starlette.responses import HTMLResponse, Response
from starlette.routing import Route

from iolab import report as report_lib
from iolab.errors import BadInput, IolabError
from iolab.probes.data import ProbeData
from iolab.report import builder as report_builder
from iolab.report import html as html_report
from iolab.report import interactive
from iolab.report import timeline as timeline_report
from iolab.report.comparison import compare
from iolab.report.glance import glances
from iolab.report.html import SAVE_JS
from iolab.report.value import RunView
from iolab.results import ExperimentId, RunId
from iolab.serve import pages
from iolab.serve.access import TokenGuard
from iolab.store import Store, open_readonly
from iolab.store import browse as browse_store
from iolab.store import live as live_store
from iolab.store.database import RunRecord

# Pages load nothing but what this server sends, and run no inline script and no eval: the
# timelines' traces (scatter, drawn in SVG) need neither.
POLICY = (
    "default-src 'none'; script-src 'self'; "
    "style-src 'self' 'unsafe-inline'; img-src 'self' data: blob:; connect-src 'self'; "
    "font-src 'self' data:; form-action 'self'; frame-ancestors 'none'"
)
HEADERS = {"content-security-policy": POLICY, "x-content-type-options": "nosniff"}
RUNS_SHOWN = 50  # the index's newest runs of the experiments it lists
# the files under /static
STATIC: dict[str, Callable[[], str]] = {
    "plotly.min.js": interactive.plotly_js,
    "timelines.js": lambda: interactive.JS,
    "save.js": lambda: SAVE_JS,
    "live.js": lambda: pages.LIVE_JS,
}


class IdConvertor(Convertor[int]):
    """A path's id: up to 100 digits (the store answers an id beyond SQLite's integers as one
    it lacks); a longer one, which ``int()`` may refuse, matches no route: a 404 either way."""

    regex = "[0-9]{1,100}"

    def convert(self, value: str) -> int:
        return int(value)

    def to_string(self, value: int) -> str:
        return str(value)


register_url_convertor("id", IdConvertor())


class PageCache:
    """The last few experiment pages, each kept while the store's runs are as they were when
    it was built (a page of 1,000 runs with 50 timelines takes about a second to build; the
    same page again comes from here). Any run added, started, finished or removed anywhere
    in the store changes the key, as a new disk run changes a report's efficiency section."""

    def __init__(self, size: int = 8) -> None:
        self.size = size
        self.pages: OrderedDict[tuple[object, ...], str] = OrderedDict()
        self.lock = threading.Lock()

    @staticmethod
    def key(store: Store, experiment: int) -> tuple[object, ...]:
        return (experiment, *browse_store.fingerprint(store))

    def get(self, key: tuple[object, ...]) -> str | None:
        with self.lock:
            page = self.pages.get(key)
            if page is not None:
                self.pages.move_to_end(key)
            return page

    def put(self, key: tuple[object, ...], page: str) -> None:
        with self.lock:
            self.pages[key] = page
            while len(self.pages) > self.size:
                self.pages.popitem(last=False)


def create_app(results: Path, token: str | None = None) -> Starlette:
    """The application over the results database at ``results``; with ``token``, every
    request must carry it (see :mod:`iolab.serve.access`)."""

    def reading(render: Callable[[Store, Request], Response]) -> Callable[[Request], Response]:
        def endpoint(request: Request) -> Response:
            try:
                with open_readonly(results) as store:
                    return render(store, request)
            except BadInput as exc:  # an id the store lacks is not found; the rest is bad input
                status = 404 if exc.field in ("RUN", "EXPERIMENT") else 400
                return HTMLResponse(pages.error_page(str(exc)), status, HEADERS)
            except IolabError as exc:
                return HTMLResponse(pages.error_page(str(exc)), 500, HEADERS)

        return endpoint

    cache = PageCache()

    def experiment(store: Store, request: Request) -> Response:
        exp = ExperimentId(int(request.path_params["id"]))
        key = cache.key(store, exp)
        page = cache.get(key)
        if page is None:
            page = _experiment_page(store, exp)
            cache.put(key, page)
        return _html(page)

    routes = [
        Route("/", reading(_experiments)),
        Route("/experiments/{id:id}", reading(experiment)),
        Route("/runs/{id:id}", reading(_run)),
        Route("/runs/{id:id}/timeline.json", reading(_timeline_json)),
        Route("/runs/{id:id}/figure.json", reading(_figure_json)),
        Route("/compare", reading(_compare)),
        Route("/static/{name}", _static),
    ]
    app = Starlette(routes=routes, exception_handlers={HTTPException: _http_error})
    if token is not None:
        app.add_middleware(TokenGuard, token=token)
    return app


def _html(text: str) -> HTMLResponse:
    return HTMLResponse(text, headers=HEADERS)


def _experiments(store: Store, request: Request) -> Response:
    q = request.query_params
    filters = browse_store.Filters(
        **{
            k: q.get(k, "").strip()
            for k in ("workload", "engine", "device", "host", "since", "until")
        }
    )
    rows = browse_store.experiments(store, filters)
    runs = glances(store, RUNS_SHOWN, [r.id for r in rows])
    return _html(pages.experiments_page(rows, filters, runs))


def _experiment_page(store: Store, exp: ExperimentId) -> str:
    """The report page, its timelines fetched as they near the screen (building the figures
    of 50 timelines took 0.65-0.75 s of a 1 s page, bench/serve_scale.py)."""
    built = report_lib.build(store, exp, timelines="median")
    page = html_report.report_page(
        built,
        datetime.now().isoformat(timespec="seconds"),
        figure_src=_figure_src,
        scripts_at=pages.STATIC,
    )
    labels = {str(c.id): c.label for c in built.cells}
    return pages.experiment_page(page, built.name, browse_store.runs_of(store, exp), labels)


def _probes(store: Store, run: RunId) -> ProbeData | None:
    """What the run's probes recorded: the whole record once finished, else the chunks
    flushed so far."""
    return store.probes(run) or live_store.load(store.conn, run)


def _run(store: Store, request: Request) -> Response:
    run = store.run(int(request.path_params["id"]))
    environment = store.environment(run.env_id) if run.env_id else {}
    marks = timeline_report.query_marks(store.query_results(run.id))
    probes = _probes(store, run.id)
    steady = timeline_report.steady_span(run.summary, probes)
    verdict, checked = _verdict(store, run)
    page = pages.run_page(
        run, environment, probes, store.logs(run.id), marks, steady, verdict, checked
    )
    return _html(page)


def _verdict(store: Store, run: RunRecord) -> tuple[str, str]:
    """The verdict kept with a finished run (its line), and the newest check of it."""
    from iolab.report.why import checked_line
    from iolab.store import checks, verdicts

    if run.status.value == "running":
        return "", ""
    d = verdicts.of_run(store, run).diagnosis
    found = checks.newest(store, run.id)
    return (d.line if d is not None else ""), (checked_line(found) if found else "")


def _timeline_json(store: Store, request: Request) -> Response:
    run = store.run(int(request.path_params["id"]))
    data = _probes(store, run.id)
    points = max((s.n for s in data.series), default=0) if data else 0
    figure = "null"
    if data is not None and data.series:
        title = f"run {run.id} · {run.experiment}"
        plots = timeline_report.plots(data, timeline_report.query_marks([]), None)
        figure = interactive.figure_json(
            interactive.figure(plots, data.duration, title, timeline_report.SINGLE_RUN_POINTS)
        )
    sections = timeline_report.sections(data, run.id) if data is not None else ""
    body = (
        f'{{"run":{run.id},"status":{json.dumps(run.status.value)},"points":{points},'
        f'"series":{len(data.series) if data else 0},"waits":{len(data.waits) if data else 0},'
        f'"checkpoints":{len(data.checkpoints) if data else 0},'
        f'"sections":{json.dumps(sections)},"figure":{figure}}}'
    )
    return Response(
        body, media_type="application/json", headers={**HEADERS, "cache-control": "no-store"}
    )


def _figure_src(view: RunView) -> str:
    title = urlencode({"title": f"{view.cell} · run {view.run_id}"})
    return f"/runs/{view.run_id}/figure.json?{title}"


def _figure_json(store: Store, request: Request) -> Response:
    """A finished run's timeline figure, as the experiment report draws it."""
    run = store.run(int(request.path_params["id"]))
    view = report_builder.run_view(store, run.id, run.summary, f"run {run.id}")
    if view is None or not view.probes.series:
        raise BadInput("run", run.id, "give a run whose probes recorded a timeline")
    title = request.query_params.get("title") or view.cell
    body = timeline_report.figure_json(view.probes, title, view.marks, steady=view.steady)
    return Response(
        body, media_type="application/json", headers={**HEADERS, "cache-control": "no-store"}
    )


def _compare(store: Store, request: Request) -> Response:
    q = request.query_params
    a, b, metric = (q.get(k, "").strip() for k in ("a", "b", "metric"))
    if not a or not b:
        return _html(pages.compare_page(a, b, metric, None))
    try:
        found = compare(store, a, b, metric or None)
    except BadInput as exc:
        return HTMLResponse(pages.compare_page(a, b, metric, None, str(exc)), 400, HEADERS)
    return _html(pages.compare_page(a, b, metric, found))


def _static(request: Request) -> Response:
    text = STATIC.get(request.path_params["name"])
    if text is None:
        raise HTTPException(404)
    return Response(
        text(), media_type="text/javascript", headers={**HEADERS, "cache-control": "max-age=86400"}
    )


def _http_error(_request: Request, exc: Exception) -> Response:
    """No such page (404), or a method other than GET (405): a page with the same headers."""
    status = exc.status_code if isinstance(exc, HTTPException) else 500
    what = {404: "no such page", 405: "this server only answers GET"}.get(status, "refused")
    return HTMLResponse(pages.error_page(what), status, HEADERS)
