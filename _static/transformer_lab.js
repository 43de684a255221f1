/* Transformer Lab site script (Jupyter Book loads every .js in _static on every page).
 *
 * Explorations on a phone. Each is a Plotly figure in a <div class="tl-plotly"> box
 * (transformer_lab.viz.plotly.figure_html), which _static/transformer_lab.css lets scroll
 * sideways on a narrow screen.
 *
 * 1. On a touch screen or a narrow window, a finger on a figure scrolls the page and the
 *    box: Plotly's drag-to-zoom (dragmode "zoom") takes every touch on the plot area and
 *    cancels the scroll, so the part of a figure beyond the box's edge could not be reached.
 *    The figures get dragmode false there; taps still move sliders and menus.
 * 2. A figure of several heatmap panels carries them stacked one above the other in
 *    layout.meta.tl_stack (transformer_lab.viz.heatmap_panels.stacked_layout). When its
 *    box is narrower than tl_stack.below_px the stacked layout is applied and the box gets
 *    the class tl-stacked (the figure then fits the box); when the box widens again, the
 *    side-by-side layout comes back.
 */
(function () {
  "use strict";

  var TOUCH = window.matchMedia("(max-width: 600px), (pointer: coarse)");

  function fit(gd) {
    var Plotly = window.Plotly;
    if (!Plotly || !gd.layout || !gd._fullLayout) return;
    var box = gd.closest("div.tl-plotly");
    var layout = {};
    var data = {};
    var restacked = false;
    if (TOUCH.matches && gd.layout.dragmode !== false) {
      gd.tlDragmode = gd.layout.dragmode === undefined ? null : gd.layout.dragmode;
      layout.dragmode = false;
    } else if (!TOUCH.matches && gd.tlDragmode !== undefined) {
      layout.dragmode = gd.tlDragmode;
      delete gd.tlDragmode;
    }
    var stack = gd.layout.meta && gd.layout.meta.tl_stack;
    if (stack && box) {
      var narrow = box.clientWidth < stack.below_px;
      if (box.classList.contains("tl-stacked") !== narrow) {
        var state = narrow ? stack.narrow : stack.wide;
        box.classList.toggle("tl-stacked", narrow);
        Object.assign(layout, state.layout);
        layout.autosize = true; // measure the figure's new width (Plotly kept the first one)
        data = state.data;
        restacked = true;
        gd.style.height = Math.round(state.layout.height) + "px";
      }
    }
    if (Object.keys(layout).length === 0) return;
    Plotly.update(gd, data, layout).then(function () {
      // a colour bar turned from upright to lying keeps its old drawing, which then holds
      // hundreds of pixels free below the plot: draw the updated figure afresh
      if (restacked) return Plotly.newPlot(gd, gd.data, gd.layout, gd._context);
    });
  }

  function fitAll() {
    document.querySelectorAll("div.tl-plotly .js-plotly-plot").forEach(fit);
  }

  var pending = null;
  function later() {
    if (pending) clearTimeout(pending);
    pending = setTimeout(function () {
      pending = null;
      fitAll();
    }, 150);
  }

  document.addEventListener("DOMContentLoaded", fitAll);
  window.addEventListener("load", fitAll);
  window.addEventListener("resize", later);
})();
