/* Render the math pymdownx.arithmatex left as \( \) and \[ \] with the KaTeX served by this site. */
(function () {
  "use strict";
  function render(root) {
    if (typeof renderMathInElement !== "function") return;
    var blocks = (root || document).querySelectorAll(".arithmatex");
    Array.prototype.forEach.call(blocks, function (el) {
      renderMathInElement(el, {
        delimiters: [
          {left: "\\(", right: "\\)", display: false},
          {left: "\\[", right: "\\]", display: true}
        ],
        throwOnError: false
      });
    });
  }
  if (window.document$ && window.document$.subscribe) window.document$.subscribe(function () { render(document); });
  else if (document.readyState === "loading") document.addEventListener("DOMContentLoaded", function () { render(document); });
  else render(document);
})();
