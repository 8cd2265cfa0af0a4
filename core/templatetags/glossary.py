"""``{% term "weight" %}``: a heading that links to its glossary entry and carries the short
explanation (a tooltip on hover, the glossary on click or tap; links are reachable by keyboard)."""

from __future__ import annotations

from django import template
from django.urls import reverse
from django.utils.html import format_html
from django.utils.safestring import SafeString

from core.glossary import term as lookup

register = template.Library()


@register.simple_tag
def term(slug: str, label: str = "") -> SafeString:
    entry = lookup(slug)
    return format_html(
        '<a class="term" href="{}#{}" title="{}">{}</a>',
        reverse("glossary"),
        entry.slug,
        entry.short,
        label or entry.name,
    )
