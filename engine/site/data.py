"""``load(root)``: the SiteData every page generator reads, with the trees and the architectures.

It sits above ``context`` and the page modules, so ``context`` never imports a page module.
"""

from __future__ import annotations

from engine.site import arch_pages, trees
from engine.site.context import SiteData


def load(root: str) -> SiteData:
    data = SiteData.load_base(root)
    data.trees = trees.load(data)
    data._tree_links()
    data.archs = arch_pages.load(data)
    data.arch_reports = arch_pages.reports(data)
    return data
