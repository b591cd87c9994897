// Progressive enhancement only: every page works without this file.
'use strict';

document.addEventListener('DOMContentLoaded', () => {
  // Copy buttons (token value, first password, recovery codes): shown only when the Clipboard API
  // is there. A field copies its value; a list its items, one a line.
  for (const button of document.querySelectorAll('[data-copy]')) {
    const source = document.getElementById(button.dataset.copy);
    const status = document.querySelector(`[data-copy-status="${button.dataset.copy}"]`);
    if (!source || !navigator.clipboard) continue;
    const isField = typeof source.select === 'function';
    const value = () => (isField ? source.value : [...source.querySelectorAll('li')].map((li) => li.textContent.trim()).join('\n'));
    button.hidden = false;
    button.addEventListener('click', async () => {
      try {
        await navigator.clipboard.writeText(value());
        if (status) status.textContent = 'Copied to the clipboard.';
      } catch {
        if (isField) {
          source.focus();
          source.select();
        } else {
          const range = document.createRange();
          range.selectNodeContents(source);
          window.getSelection().removeAllRanges();
          window.getSelection().addRange(range);
        }
        if (status) status.textContent = 'Copying was not allowed: the value is selected, press Ctrl+C (or ⌘C).';
      }
    });
  }
  for (const input of document.querySelectorAll('[data-select-on-focus]')) {
    input.addEventListener('focus', () => input.select());
  }
  // On a phone the navigation folds behind a Menu button (a disclosure: aria-expanded on the
  // button, the list shown or hidden). Without this script the list simply wraps, all of it shown.
  const toggle = document.querySelector('.menu-toggle');
  const nav = toggle && document.getElementById(toggle.getAttribute('aria-controls'));
  if (toggle && nav) {
    document.documentElement.classList.add('js-menu');
    const setOpen = (open) => {
      toggle.setAttribute('aria-expanded', String(open));
      nav.classList.toggle('open', open);
    };
    toggle.addEventListener('click', () => setOpen(toggle.getAttribute('aria-expanded') !== 'true'));
    nav.addEventListener('keydown', (event) => {
      if (event.key === 'Escape') {
        setOpen(false);
        toggle.focus();
      }
    });
    toggle.addEventListener('keydown', (event) => {
      if (event.key === 'Escape') setOpen(false);
    });
  }
  // After a failed form, move focus to the error summary (or the first invalid field).
  const focusTarget = document.querySelector('[data-focus]');
  if (focusTarget) focusTarget.focus();

  const upload = document.querySelector('[data-import-form]');
  if (upload) enhanceImportForm(upload);
  const poll = document.querySelector('[data-import-status-url]');
  if (poll) pollImport(poll);
});

/** Uploads with XMLHttpRequest to show upload progress, then follows the import until it has finished. */
function enhanceImportForm(form) {
  const block = document.getElementById('import-progress');
  const bar = document.getElementById('import-progress-bar');
  const label = document.getElementById('import-progress-label');
  const errorBox = document.getElementById('import-error');
  form.dataset.enhanced = 'true';
  form.addEventListener('submit', (event) => {
    const file = form.querySelector('input[type="file"]');
    if (!file || !file.files || file.files.length === 0) return; // let the server explain
    if (form.querySelector('input[name="check_only"]:checked')) return; // a check answers with a page
    event.preventDefault();
    const button = form.querySelector('button[type="submit"]');
    button.disabled = true;
    errorBox.hidden = true;
    block.hidden = false;
    bar.removeAttribute('value');
    label.textContent = 'Uploading…';
    const xhr = new XMLHttpRequest();
    xhr.open('POST', form.action);
    xhr.setRequestHeader('Accept', 'application/json');
    xhr.setRequestHeader('X-CSRF-Token', form.querySelector('input[name="_csrf"]').value);
    xhr.upload.addEventListener('progress', (e) => {
      if (!e.lengthComputable) return;
      bar.max = e.total;
      bar.value = e.loaded;
      label.textContent = `Uploading… ${Math.round((e.loaded / e.total) * 100)}%`;
    });
    xhr.upload.addEventListener('load', () => {
      bar.removeAttribute('value');
      label.textContent = 'Uploaded. Processing the rows…';
    });
    xhr.addEventListener('load', () => {
      let body = {};
      try {
        body = JSON.parse(xhr.responseText);
      } catch {
        /* not JSON */
      }
      if (xhr.status === 409 && body.confirmUrl) {
        // The same file was imported recently: the page that asks before importing it again.
        window.location.assign(body.confirmUrl);
      } else if (xhr.status >= 200 && xhr.status < 300 && body.statusUrl) {
        followImport(body.statusUrl, body.resultUrl, bar, label);
      } else {
        fail(body.message || 'The upload failed. Try again.');
      }
    });
    xhr.addEventListener('error', () => fail('The upload failed: the connection was lost. Try again.'));
    xhr.send(new FormData(form));

    function fail(message) {
      block.hidden = true;
      errorBox.hidden = false;
      errorBox.querySelector('p').textContent = message;
      errorBox.focus();
      button.disabled = false;
    }
  });
}

function followImport(statusUrl, resultUrl, bar, label) {
  const tick = async () => {
    try {
      const res = await fetch(statusUrl, { headers: { Accept: 'application/json' }, credentials: 'same-origin' });
      const body = await res.json();
      if (body.done) {
        label.textContent = 'Finished. Opening the results…';
        window.location.assign(resultUrl);
        return;
      }
      if (typeof body.processed === 'number' && typeof body.total === 'number' && body.total > 0) {
        bar.max = body.total;
        bar.value = body.processed;
        label.textContent = `Processing… ${body.processed.toLocaleString('en-GB')} of ${body.total.toLocaleString('en-GB')} rows`;
        if (typeof body.rowsPerSecond === 'number' && body.estimatedFinishAt) {
          const finish = new Date(body.estimatedFinishAt).toLocaleTimeString('en-GB', { hour: '2-digit', minute: '2-digit' });
          label.textContent += `, about ${Math.round(body.rowsPerSecond).toLocaleString('en-GB')} a second: done around ${finish}`;
        }
      } else {
        label.textContent = 'Processing the rows…';
      }
    } catch {
      label.textContent = 'Processing… (waiting for the server)';
    }
    setTimeout(tick, 1000);
  };
  tick();
}

/** On a results page of an import that is still running: reload when it has finished. */
function pollImport(el) {
  const url = el.dataset.importStatusUrl;
  const tick = async () => {
    try {
      const res = await fetch(url, { headers: { Accept: 'application/json' }, credentials: 'same-origin' });
      const body = await res.json();
      if (body.done) return window.location.reload();
    } catch {
      /* try again */
    }
    setTimeout(tick, 1500);
  };
  setTimeout(tick, 1500);
}
