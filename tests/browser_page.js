// The page side of tests/browser_harness.py, installed in every page before JupyterLab
// loads (context.add_init_script). It reads the notebook *model* (execution counts,
// outputs, tags) rather than guess from the DOM.
window.__harness = {
  // The notebook panel open on `path`, or undefined.
  panel(path) {
    const app = window.jupyterapp;
    if (!app) return undefined;
    for (const w of app.shell.widgets('main')) {
      if (w.context && w.context.path === path && w.content && w.sessionContext) return w;
    }
    return undefined;
  },

  // Code cells that Run All executes: JupyterLab skips blank ones (they keep no count).
  codeCells(panel) {
    return panel.content.widgets.filter(
      c => c.model.type === 'code' && c.model.sharedModel.getSource().trim() !== '');
  },

  allowsErrors(cell) {
    const tags = cell.model.getMetadata('tags') || [];
    return tags.includes('raises-exception') || tags.includes('nbval-raises-exception');
  },

  // Where a notebook stands, for the Python side's polling loops.
  state(path) {
    const panel = this.panel(path);
    if (!panel) return {opened: false};
    const kernel = panel.sessionContext.session && panel.sessionContext.session.kernel;
    const cells = this.codeCells(panel);
    return {
      opened: true,
      kernel: kernel ? kernel.status : 'none',
      codeCells: cells.length,
      unrun: cells.filter(c => c.model.executionCount === null).length,
      // A cell error stops Run All: the cells after it never get a count.
      stoppedByError: cells.some(c => !this.allowsErrors(c) && this.hasError(c.model.outputs)),
    };
  },
  // Read each output's type from the model: asked many times a second while a test waits,
  // so no output (pictures and all) is copied out with toJSON.
  hasError(outputs) {
    for (let i = 0; i < outputs.length; i++) {
      if (outputs.get(i).type === 'error') return true;
    }
    return false;
  },

  // Everything that looks broken on the page, as sentences naming the cell.
  problems(path) {
    const traceback = /Traceback \(most recent call last\)|^\w*(Error|Exception): /m;
    const found = [];
    const panel = this.panel(path);
    panel.content.widgets.forEach((cell, i) => {
      if (cell.model.type !== 'code') return;
      const where = `cell ${i + 1} (${cell.model.sharedModel.getSource().split('\n')[0].slice(0, 60)})`;
      const errorsAllowed = this.allowsErrors(cell);
      if (!errorsAllowed) {
        for (const o of cell.model.outputs.toJSON()) {
          if (o.output_type === 'error') found.push(`${where}: ${o.ename}: ${o.evalue}`);
        }
        for (const node of cell.node.querySelectorAll(
            '.jp-OutputArea-output[data-mime-type="application/vnd.jupyter.stderr"], .jp-RenderedText')) {
          if (traceback.test(node.innerText)) {
            found.push(`${where}: error text in the output: ${node.innerText.slice(0, 300)}`);
          }
        }
      }
      for (const node of cell.node.querySelectorAll('.jp-OutputArea-output')) {
        const text = node.innerText;
        if (text.includes('Error displaying widget')) found.push(`${where}: ${text.slice(0, 200)}`);
        if (text.includes('Loading widget...')) found.push(`${where}: a widget never finished loading`);
        if (node.querySelector('.jupyter-widgets-error-widget')) {
          found.push(`${where}: a widget failed to render: ${text.slice(0, 200)}`);
        }
      }
    });
    return found;
  },

  widgetsStillLoading() {
    // textContent, not innerText: asked many times a second, it must not lay the page out
    return [...document.querySelectorAll('.jp-OutputArea-output')]
        .some(n => n.textContent.includes('Loading widget...'));
  },

  // When the kernel of `path` last sent or was sent a message (performance.now(), ms).
  // A notebook at rest exchanges none; a figure that keeps asking to be drawn again
  // never lets the kernel rest (its CPU, and a frame to the page ten times a second).
  lastMessage: {},
  visiting: null,
  watchTraffic(path) {
    const kernel = this.panel(path).sessionContext.session.kernel;
    this.visiting = path;
    this.lastMessage[path] = performance.now();
    kernel.anyMessage.connect(() => { this.lastMessage[path] = performance.now(); });
  },
  quietFor(path) {
    return performance.now() - this.lastMessage[path];
  },

  // Errors the kernel reports while widgets are used: an exception in a widget
  // callback shows in no cell, only in the kernel's iopub messages.
  // Only the kernel watched now counts: an earlier notebook's kernel, shut down in this
  // page, can still print its exit noise to stderr while the next notebook is visited.
  kernelErrors: [],
  watchedKernel: null,
  watchKernel(path) {
    const kernel = this.panel(path).sessionContext.session.kernel;
    this.watchedKernel = kernel;
    kernel.iopubMessage.connect((_, msg) => {
      if (this.watchedKernel !== kernel) return;
      const c = msg.content;
      if (msg.header.msg_type === 'error') {
        // The error and the last lines of its traceback: where in the kernel it began.
        const lines = (c.traceback || []).join('\n').replace(/\x1b\[[0-9;]*m/g, '')
          .split('\n').filter(l => /^\s*(File |\S+\.py:\d+|\S.*line \d+)/.test(l));
        const where = lines.slice(-4).join(' | ');
        this.kernelErrors.push(`${c.ename}: ${c.evalue}` + (where ? ` [at ${where}]` : ''));
      }
      if (msg.header.msg_type === 'stream' && c.name === 'stderr' && /Traceback/.test(c.text)) {
        this.kernelErrors.push(c.text.slice(0, 500));
      }
    });
  },

  // What the widget's HTML widgets hold (markup such as an SVG drawing, not just text).
  htmlMarkup(root) {
    return [...root.querySelectorAll('.widget-html-content')].map(n => n.innerHTML).join('\n');
  },

  // The widget's text without slider read-outs: those change in the browser at once,
  // before the kernel has done anything, so they would make every "text changed" pass.
  visibleText(root) {
    const skip = '.widget-readout, .noUi-target, script, style';
    const walker = document.createTreeWalker(root, NodeFilter.SHOW_TEXT);
    const parts = [];
    while (walker.nextNode()) {
      const node = walker.currentNode;
      if (!node.parentElement.closest(skip)) parts.push(node.textContent);
    }
    return parts.join(' ').replace(/\s+/g, ' ').trim();
  },

  // Every frame a live plot is given, as the page draws it: a canvas with a __frames
  // list (see recordFrames) keeps a PNG of itself after each drawImage onto it, unless
  // it is the same picture as the one before (ipympl sends a still plot's last frame
  // again, a second later).
  recordFrames(root) {
    const canvases = [...root.querySelectorAll('.jupyter-matplotlib-canvas-div canvas, canvas')]
        .filter((c, i, all) => all.indexOf(c) === i && c.width > 0 && c.height > 0);
    for (const c of canvases) { c.__frames = []; c.__last = c.toDataURL(); }
    return canvases.length;
  },
  // Frames recorded, and none newer than `ms` ago.
  framesSince(root, ms) {
    let n = 0, last = 0;
    for (const c of root.querySelectorAll('canvas')) {
      if (c.__frames) { n += c.__frames.length; last = Math.max(last, c.__frameAt || 0); }
    }
    return n > 0 && performance.now() - last >= ms;
  },
  takeFrames(root) {
    const frames = [];
    for (const c of root.querySelectorAll('canvas')) {
      if (c.__frames) { frames.push(...c.__frames); c.__frames = []; }
    }
    return frames;
  },
  // The widget's canvases as PNG data URLs, joined: equal text, equal pixels.
  canvasPixels(root) {
    root.__pixelsAt = {draws: this.draws(root), time: performance.now()};
    return [...root.querySelectorAll('canvas')].map(c => c.toDataURL()).join('|');
  },
  draws(root) {
    let n = 0;
    for (const c of root.querySelectorAll('canvas')) n += c.__draws || 0;
    return n;
  },
  // Has the widget changed since it showed `text` and `snap` (its canvasPixels for
  // 'canvas-changes', its htmlMarkup for 'markup-changes', else its text)? Returns false,
  // or what it shows now: [text, snap]. A canvas is encoded again only once something
  // was drawn on it (or a second went by): PNG-encoding every 50 ms would cost more than
  // the widget's own work.
  changedSince(root, kind, text, snap) {
    const nowText = this.visibleText(root);
    let nowSnap = snap;
    if (kind === 'canvas-changes') {
      const at = root.__pixelsAt || {draws: -1, time: 0};
      if (this.draws(root) !== at.draws || performance.now() - at.time > 1000) {
        nowSnap = this.canvasPixels(root);
      }
    } else {
      nowSnap = kind === 'markup-changes' ? this.htmlMarkup(root) : nowText;
    }
    return nowText !== text || nowSnap !== snap ? [nowText, nowSnap] : false;
  },
  stopFrames(root) {
    for (const c of root.querySelectorAll('canvas')) delete c.__frames;
  },

  // Does each widget of the notebook fit its column? For each widget root: its width,
  // the width of the output area it sits in, and anything inside it (a plot, a picture,
  // a table) that reaches past the area's right edge; and whether the notebook itself
  // scrolls sideways.
  layout(path) {
    const panel = this.panel(path);
    const found = [];
    const scroller = panel.content.node;
    if (scroller.scrollWidth > scroller.clientWidth + 1) {
      found.push(`the notebook scrolls sideways: ${scroller.scrollWidth} px of content ` +
                 `in ${scroller.clientWidth} px`);
    }
    for (const root of panel.node.querySelectorAll('.course-widget')) {
      const name = [...root.classList].find(c => c.startsWith('w-')) || 'widget';
      const area = root.closest('.jp-OutputArea-output') || root.parentElement;
      const edge = area.getBoundingClientRect().right;
      const column = Math.round(area.clientWidth);
      let worst = null;
      for (const el of [root, ...root.querySelectorAll('*')]) {
        if (!el.getClientRects().length) continue;
        const r = el.getBoundingClientRect();
        if (r.width === 0) continue;
        const over = r.right - edge;
        if (over > 1 && (!worst || over > worst.over)) {
          worst = {over, what: el.tagName.toLowerCase() + (el.className && typeof el.className === 'string'
                                ? '.' + el.className.split(' ')[0] : ''), width: Math.round(r.width)};
        }
      }
      if (worst) {
        found.push(`${name}: ${worst.what} (${worst.width} px wide) reaches ${Math.round(worst.over)} px ` +
                   `past its ${column} px column`);
      }
      if (area.scrollWidth > area.clientWidth + 1) {
        found.push(`${name}: its output area scrolls sideways (${area.scrollWidth} px in ${column} px)`);
      }
    }
    return found;
  },

  // The smallest text of each widget, in CSS px and as shown (CSS px x devicePixelRatio),
  // with the text it belongs to. Text inside plots is drawn in the canvas (and checked
  // in Python); this is the widgets' own HTML text: readouts, labels, buttons, boxes.
  textSizes(path) {
    const panel = this.panel(path);
    const result = [];
    for (const root of panel.node.querySelectorAll('.course-widget')) {
      const name = [...root.classList].find(c => c.startsWith('w-')) || 'widget';
      let smallest = null;
      const consider = (el, text) => {
        if (!el || !el.getClientRects().length || !text.trim()) return;
        if (el.closest('style, script, .jupyter-matplotlib-toolbar')) return;
        const size = parseFloat(getComputedStyle(el).fontSize);
        if (!smallest || size < smallest.size) smallest = {size, text: text.trim().slice(0, 60)};
      };
      const walker = document.createTreeWalker(root, NodeFilter.SHOW_TEXT);
      while (walker.nextNode()) consider(walker.currentNode.parentElement, walker.currentNode.textContent);
      for (const box of root.querySelectorAll('input[type=text], input[type=number], textarea, select')) {
        consider(box, box.value || box.placeholder || 'box');
      }
      if (smallest) result.push({name, px: smallest.size, shown: smallest.size * window.devicePixelRatio,
                                 text: smallest.text});
    }
    return result;
  },

  // A widget's output: its live view, or the HTML form (with its picture) that the stored
  // notebook keeps in its place (tools/run_notebooks.py, stored_form).
  isWidgetOutput(output) {
    const data = output.data || {};
    return 'application/vnd.jupyter.widget-view+json' in data ||
           [].concat(data['text/html'] || []).join('').includes('class="course-widget');
  },

  // The share of a stored picture's pixels that are coloured (neither white, grey nor
  // black): empty axes have none; a plotted curve or bars have some.
  colourShare(img) {
    const c = document.createElement('canvas');
    c.width = img.naturalWidth; c.height = img.naturalHeight;
    const ctx = c.getContext('2d');
    ctx.drawImage(img, 0, 0);
    const d = ctx.getImageData(0, 0, c.width, c.height).data;
    let n = 0;
    for (let i = 0; i < d.length; i += 4) {
      const hi = Math.max(d[i], d[i + 1], d[i + 2]), lo = Math.min(d[i], d[i + 1], d[i + 2]);
      if (d[i + 3] > 0 && hi - lo > 60) n++;
    }
    return n / (d.length / 4);
  },
};

// Count a live plot's frames (recordFrames above): wrap drawImage once, for every page.
(() => {
  const draw = CanvasRenderingContext2D.prototype.drawImage;
  CanvasRenderingContext2D.prototype.drawImage = function (...args) {
    const result = draw.apply(this, args);
    if (this.canvas) this.canvas.__draws = (this.canvas.__draws || 0) + 1;
    const frames = this.canvas && this.canvas.__frames;
    if (frames) {
      const url = this.canvas.toDataURL();
      if (this.canvas.__last !== url) { frames.push(url); this.canvas.__frameAt = performance.now(); }
      this.canvas.__last = url;
    }
    return result;
  };
})();
