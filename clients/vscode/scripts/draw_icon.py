"""Draws clients/vscode/images/icon.png, the extension's 128x128 marketplace icon: lines of
code, the last one followed by a suggestion in ghost text after the cursor.

Run it again after changing it (Pillow comes with the dev environment's matplotlib):
    .venv/bin/python clients/vscode/scripts/draw_icon.py
"""

from pathlib import Path

from PIL import Image, ImageDraw

SIZE = 128
SCALE = 4  # drawn 4x larger, then scaled down: smooth edges
BACKGROUND = (31, 42, 68, 255)
CODE = (236, 240, 247, 255)
GHOST = (120, 134, 166, 255)
CURSOR = (61, 220, 151, 255)


def draw() -> Image.Image:
    big = SIZE * SCALE
    image = Image.new("RGBA", (big, big), (0, 0, 0, 0))
    pen = ImageDraw.Draw(image)

    def box(x0: float, y0: float, x1: float, y1: float, fill: tuple[int, ...]) -> None:
        r = (y1 - y0) / 2 * SCALE
        xy = (x0 * SCALE, y0 * SCALE, x1 * SCALE, y1 * SCALE)
        pen.rounded_rectangle(xy, radius=r, fill=fill)

    pen.rounded_rectangle((0, 0, big - 1, big - 1), radius=26 * SCALE, fill=BACKGROUND)
    box(24, 30, 74, 40, CODE)  # def ...
    box(36, 50, 96, 60, CODE)  #     body line
    box(36, 70, 62, 80, CODE)  #     typed so far
    pen.rectangle((66 * SCALE, 66 * SCALE, 70 * SCALE, 84 * SCALE), fill=CURSOR)
    box(74, 70, 104, 80, GHOST)  # the suggestion, in ghost text
    box(36, 90, 84, 100, GHOST)
    return image.resize((SIZE, SIZE), Image.Resampling.LANCZOS)


if __name__ == "__main__":
    out = Path(__file__).resolve().parent.parent / "images" / "icon.png"
    draw().save(out, optimize=True)
    print(f"wrote {out}")
