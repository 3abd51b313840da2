"""The Snakemake report of the .test run (`snakemake --report`), opened in headless Chromium: a
reader's clicks reach the mutation and SV summary plots and the MultiQC report, and what the page then
shows is the files the run wrote."""

import base64
import json
import shutil
import subprocess
from html.parser import HTMLParser

import pytest

from conftest import run_snakemake

pytestmark = pytest.mark.workflow

CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")

# Clicks through the report's menus as a reader would, one step each time the page has rendered
# the previous one, and leaves the outcome on <body data-probe="...">. A step is
# {"link": text} (a menu entry), {"link": text, "optional": true} (a subcategory level that the
# report skips when a category has only one), or {"row": label} (the view button of a result row).
DRIVER = """
<script>
window.addEventListener("load", function () {
  const steps = %s;
  const status = (text) => document.body.setAttribute("data-probe", text);
  const link = (text) => [...document.querySelectorAll("nav a")].find((a) => a.textContent.trim() === text);
  const rowButton = (label) => {
    const row = [...document.querySelectorAll("nav tr")].find(
      (tr) => [...tr.querySelectorAll("td")].some((td) => td.textContent.trim() === label));
    return row && row.querySelector("a[type=button]");
  };
  let index = 0, tries = 0;
  function step() {
    if (index === steps.length) return status("done");
    const want = steps[index];
    const target = want.row !== undefined ? rowButton(want.row) : link(want.link);
    if (target) {
      target.click();
      index += 1;
      tries = 0;
    } else if (want.optional && tries >= 3) {
      index += 1;
      tries = 0;
    } else if (++tries > 40) {
      return status("not found: " + JSON.stringify(want));
    }
    setTimeout(step, 250);
  }
  status("started");
  setTimeout(step, 250);
});
</script>
"""


class RenderedPage(HTMLParser):
    """What the browser shows: img/iframe sources, nav link texts and the body's probe attribute
    (script bodies, which hold the report's embedded data, are not markup and are not seen)."""

    def __init__(self):
        super().__init__()
        self.images, self.frames, self.links, self.downloads, self.probe = [], [], [], [], None
        self._link_text = None

    def handle_starttag(self, tag, attrs):
        attrs = dict(attrs)
        if tag == "img":
            self.images.append(attrs.get("src") or "")
        elif tag == "iframe":
            self.frames.append(attrs.get("src") or "")
        elif tag == "a":
            self._link_text = []
            if "download" in attrs:  # a result the report offers as a file (text, TSV)
                self.downloads.append(attrs.get("href") or "")
        elif tag == "body":
            self.probe = attrs.get("data-probe")

    def handle_data(self, data):
        if self._link_text is not None:
            self._link_text.append(data)

    def handle_endtag(self, tag):
        if tag == "a" and self._link_text is not None:
            self.links.append("".join(self._link_text).strip())
            self._link_text = None


def data_uri_file(uri):
    """(file name, bytes) of a Snakemake report data URI (`data:MIME;charset=..;filename=..;base64,..`)."""
    header, _, payload = uri.partition(",")
    fields = dict(part.split("=", 1) for part in header.split(";") if "=" in part)
    return fields.get("filename"), base64.b64decode(payload)


@pytest.fixture(scope="module")
def report_html(pipeline_run, tmp_path_factory):
    """The report of the session's pipeline run, built with the config that run used."""
    if CHROMIUM is None:
        pytest.skip("chromium is not installed (apt-get install chromium)")
    config = pipeline_run.parent / "config" / "config.yaml"  # the default scenario
    assert config.exists(), config
    report = tmp_path_factory.mktemp("report") / "report.html"
    run_snakemake(config, "--report", str(report))
    return report


def render(report, steps, tmp_path):
    """Open a copy of the report with the click driver in headless Chromium; the page after the
    clicks."""
    head, body_end, tail = report.read_text().rpartition("</body>")
    assert body_end, "the report has no </body>"
    page = tmp_path / "page.html"
    page.write_text(head + DRIVER % json.dumps(steps) + body_end + tail)
    result = subprocess.run(
        [CHROMIUM, "--headless", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage", "--no-first-run",
         f"--user-data-dir={tmp_path / 'chromium-profile'}", "--virtual-time-budget=20000",
         "--dump-dom", page.as_uri()],
        capture_output=True, text=True, timeout=90,
    )
    assert result.returncode == 0, result.stderr[-2000:]
    parsed = RenderedPage()
    parsed.feed(result.stdout)
    return parsed


def test_report_shows_the_mutation_summary_plot(report_html, pipeline_run, tmp_path):
    tumors = sorted(path.name for path in (pipeline_run / "mutation").iterdir())
    tumor = tumors[0]
    page = render(report_html, [{"link": "Mutations"}, {"link": tumor, "optional": True}, {"row": "summary plot"}],
                  tmp_path)
    assert page.probe == "done", page.probe
    plot = pipeline_run / "mutation" / tumor / f"{tumor}.genomon_mutation.summary.png"
    shown = [data_uri_file(src) for src in page.images if src.startswith("data:image/png")]
    assert (plot.name, plot.read_bytes()) in shown, [name for name, _ in shown]


def test_report_shows_the_multiqc_report_under_qc(report_html, pipeline_run, tmp_path):
    page = render(report_html, [{"link": "QC"}, {"link": "MultiQC"}, {"row": "MultiQC (all samples)"}], tmp_path)
    assert page.probe == "done", page.probe
    multiqc = pipeline_run / "qc" / "multiqc_report.html"
    frames = [data_uri_file(src) for src in page.frames if src.startswith("data:text/html")]
    assert frames, "no HTML result is shown"
    (name, content), = frames
    assert name == multiqc.name and content == multiqc.read_bytes()
    assert b"MultiQC" in content


def test_report_shows_the_filtered_svs(report_html, pipeline_run, tmp_path):
    page = render(report_html, [{"link": "Structural variants"}, {"link": "tumor", "optional": True}], tmp_path)
    assert page.probe == "done", page.probe
    table = pipeline_run / "sv" / "tumor" / "tumor.genomonSV.result.filt.txt"
    assert b"\tdeletion\t" in table.read_bytes()
    offered = [data_uri_file(href) for href in page.downloads if href.startswith("data:")]
    assert (table.name, table.read_bytes()) in offered, [name for name, _ in offered]


def test_report_shows_the_sv_summary_plot_and_counts(report_html, pipeline_run, tmp_path):
    page = render(report_html, [{"link": "Structural variants"}, {"link": "tumor", "optional": True},
                                {"row": "SV summary plot"}], tmp_path)
    assert page.probe == "done", page.probe
    prefix = pipeline_run / "sv" / "tumor" / "tumor.genomonSV.summary"
    plot = prefix.with_name(prefix.name + ".png")
    shown = [data_uri_file(src) for src in page.images if src.startswith("data:image/png")]
    assert (plot.name, plot.read_bytes()) in shown, [name for name, _ in shown]
    counts = prefix.with_name(prefix.name + ".tsv")
    offered = [data_uri_file(href) for href in page.downloads if href.startswith("data:")]
    assert (counts.name, counts.read_bytes()) in offered, [name for name, _ in offered]
