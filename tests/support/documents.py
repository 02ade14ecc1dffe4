"""Small documents of each supported type, built in code (no binary fixtures in git)."""

from __future__ import annotations

# Two short Markdown documents about brewing: the knowledge base of the turn and chat-page tests.
DRINKS = {
    "Coffee brewing": (
        "# Coffee brewing\n\n## Water\n\nBrew coffee with water between 90 and 96 degrees Celsius. "
        "Boiling water extracts bitter compounds.\n\n## Grind\n\nEspresso needs a fine grind; a French press "
        "needs a coarse grind."
    ),
    "Tea basics": "# Tea\n\nGreen tea is brewed at 70 to 80 degrees Celsius for two to three minutes.",
}


def make_pdf(pages: list[str], title: str = "") -> bytes:
    """A minimal valid PDF with one text line per page (Helvetica), xref offsets computed."""
    objects: list[bytes] = []
    kids = " ".join(f"{3 + 2 * i} 0 R" for i in range(len(pages)))
    objects.append(b"<< /Type /Catalog /Pages 2 0 R >>")
    objects.append(f"<< /Type /Pages /Kids [{kids}] /Count {len(pages)} >>".encode())
    font_ref = 3 + 2 * len(pages)
    for i, text in enumerate(pages):
        content_ref = 4 + 2 * i
        objects.append(
            f"<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] /Contents {content_ref} 0 R "
            f"/Resources << /Font << /F1 {font_ref} 0 R >> >> >>".encode()
        )
        stream = f"BT /F1 12 Tf 72 712 Td ({text}) Tj ET".encode()
        objects.append(b"<< /Length %d >>\nstream\n" % len(stream) + stream + b"\nendstream")
    objects.append(b"<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica >>")
    info_ref = None
    if title:
        objects.append(f"<< /Title ({title}) >>".encode())
        info_ref = len(objects)
    out = bytearray(b"%PDF-1.4\n")
    offsets = []
    for number, body in enumerate(objects, start=1):
        offsets.append(len(out))
        out += f"{number} 0 obj\n".encode() + body + b"\nendobj\n"
    xref = len(out)
    out += f"xref\n0 {len(objects) + 1}\n0000000000 65535 f \n".encode()
    for offset in offsets:
        out += f"{offset:010d} 00000 n \n".encode()
    info = f" /Info {info_ref} 0 R" if info_ref else ""
    out += f"trailer\n<< /Size {len(objects) + 1} /Root 1 0 R{info} >>\nstartxref\n{xref}\n%%EOF\n".encode()
    return bytes(out)


HTML = """<html><head><title>Brewing guide</title></head><body>
<nav><a href="/">Home</a> | <a href="/shop">Shop</a></nav>
<article><h1>Brewing guide</h1><h2>Water</h2>
<p>Brew coffee with water between 90 and 96 degrees Celsius, never boiling, because boiling water extracts
bitter compounds from the grounds and flattens the aroma of a good roast.</p>
<h2>Grind</h2><p>Espresso needs a fine grind because the water passes through the coffee in about thirty
seconds, while a French press needs a coarse grind for its four minute steep.</p></article>
<footer>Copyright 2026 Example Coffee. All rights reserved.</footer></body></html>"""
