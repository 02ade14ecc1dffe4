"""OCR: character accuracy and throughput of the offline engine (RapidOCR, PP-OCRv4) on images rendered here.

English (DejaVu Sans) and Chinese (a CJK font: Debian's fonts-wqy-microhei, `make fonts`) sentences are
rendered by Pillow, two lines per image, at several font sizes, as PNG; plus a scanned-page case (a whole page
of text, as ingestion renders a PDF page without a text layer). For each case, side by side in one run:

- accuracy as 1 − CER (Levenshtein distance / reference length, both with line breaks removed), once with
  spaces ignored (Chinese has none; PP-OCR often drops narrow English spaces) and once with them (English);
- images per second, one image at a time through :class:`ragline.models.rapid_ocr.RapidOcr` (its ONNX
  sessions use every core: 2 here), after one warm-up image; and the mean milliseconds per image.

    .venv/bin/python bench/ocr.py [--images 6]
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from ragline.models.rapid_ocr import RapidOcr  # noqa: E402
from tests.support.images import cjk_font, latin_font, render_text  # noqa: E402

ENGLISH = [
    "The harbour master logs every tide",
    "Ferry tickets cost 12 euros on weekdays",
    "Valve torque is 35 newton metres",
    "Invoice 48213 is due on 30 June",
    "Boiler pressure must stay under 6 bar",
    "Coolant is flushed every 900 hours",
    "The north gate closes at dusk",
    "Send the signed form to the county office",
    "Backups run nightly at 02:30 UTC",
    "Replace the filter after 400 cycles",
    "Each pallet carries 24 boxes of tiles",
    "Visitors must wear a hard hat on site",
]
CHINESE = [
    "港口管理员每天记录潮汐",
    "工作日渡轮票价为十二欧元",
    "阀门扭矩为三十五牛米",
    "发票编号四八二一三六月到期",
    "锅炉压力必须低于六巴",
    "冷却液每九百小时更换一次",
    "北门在黄昏时关闭",
    "请将签字表格寄到县办公室",
    "备份每晚两点半运行",
    "过滤器在四百次循环后更换",
    "每个托盘装二十四箱瓷砖",
    "访客在工地必须佩戴安全帽",
]
SIZES = (14, 20, 28, 40)


def distance(a: str, b: str) -> int:
    """Levenshtein distance (insertions, deletions, substitutions), two rows at a time."""
    previous = list(range(len(b) + 1))
    for i, ca in enumerate(a, start=1):
        current = [i]
        for j, cb in enumerate(b, start=1):
            current.append(min(previous[j] + 1, current[j - 1] + 1, previous[j - 1] + (ca != cb)))
        previous = current
    return previous[-1]


def accuracy(references: list[str], hypotheses: list[str], *, spaces: bool) -> float:
    """1 − CER over all images (distances and lengths summed), line breaks removed, spaces optionally."""

    def norm(text: str) -> str:
        text = " ".join(text.split())
        return text if spaces else text.replace(" ", "")

    errors = sum(distance(norm(r), norm(h)) for r, h in zip(references, hypotheses, strict=True))
    return 1 - errors / max(1, sum(len(norm(r)) for r in references))


def run_case(engine: RapidOcr, texts: list[list[str]], font: str, size: int) -> dict[str, float]:
    images = [render_text(lines, font=font, size=size) for lines in texts]
    seconds, hypotheses = [], []
    for image in images:
        start = time.perf_counter()
        hypotheses.append(engine.ocr(image).text)
        seconds.append(time.perf_counter() - start)
    references = ["\n".join(lines) for lines in texts]
    return {
        "acc": accuracy(references, hypotheses, spaces=False),
        "acc_spaces": accuracy(references, hypotheses, spaces=True),
        "per_s": len(images) / sum(seconds),
        "ms": 1000 * statistics.mean(seconds),
    }


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--images", type=int, default=6, help="images per language and size (2 lines each)")
    args = parser.parse_args()
    fonts = {"en": latin_font(), "zh": cjk_font()}
    sentences = {"en": ENGLISH, "zh": CHINESE}
    missing = [language for language, font in fonts.items() if font is None]
    if missing:
        print(f"no font for {', '.join(missing)} (make fonts installs a CJK one): those columns are left out")
    load_start = os.getloadavg()
    engine = RapidOcr()
    start = time.perf_counter()
    engine.load()
    load_s = time.perf_counter() - start
    engine.ocr(render_text(["warm up"], font=fonts["en"] or fonts["zh"] or ""))
    results: dict[tuple[str, str], dict[str, float]] = {}
    for size in SIZES:
        for language, font in fonts.items():
            if font is None:
                continue
            pool = sentences[language]
            texts = [[pool[(2 * i) % len(pool)], pool[(2 * i + 1) % len(pool)]] for i in range(args.images)]
            results[(f"{size}px", language)] = run_case(engine, texts, font, size)
    for language, font in fonts.items():
        if font is None:
            continue
        page = [sentences[language][i % len(sentences[language])] for i in range(24)]
        # A page of 24 lines at 28 px, about what a scanned A4 page rendered at 144 dpi holds.
        results[("page", language)] = run_case(engine, [page] * 2, font, 28)
    load_end = os.getloadavg()

    languages = [language for language, font in fonts.items() if font is not None]
    print(
        f"RapidOCR (rapidocr-onnxruntime 1.4.4, PP-OCRv4 det+rec, onnxruntime), {os.cpu_count()} CPUs; "
        f"models loaded in {load_s:.2f} s; {args.images} images of 2 lines per row (page: 2 pages of 24 lines)"
    )
    header = "case  | " + " | ".join(
        f"{lang} 1-CER no-sp" + (" | en 1-CER w/ sp" if lang == "en" else "") + f" | {lang} img/s | {lang} ms/img"
        for lang in languages
    )
    print(header)
    print("-" * len(header))
    for case in [*(f"{s}px" for s in SIZES), "page"]:
        cells = []
        for lang in languages:
            r = results[(case, lang)]
            cells.append(f"{r['acc']:13.3f}")
            if lang == "en":
                cells.append(f"{r['acc_spaces']:14.3f}")
            cells.extend([f"{r['per_s']:9.2f}", f"{r['ms']:10.0f}"])
        print(f"{case:5} | " + " | ".join(cells))
    print(
        f"load average (1/5/15 min): {load_start[0]:.2f}/{load_start[1]:.2f}/{load_start[2]:.2f} at the start, "
        f"{load_end[0]:.2f}/{load_end[1]:.2f}/{load_end[2]:.2f} at the end (2 cores shared with other sessions)"
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
