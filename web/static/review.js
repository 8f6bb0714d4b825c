// The review page's keys and buttons: A, B, T (tie) and S (skip) post the
// label of the pair shown as JSON to the server, then load the next pair.
// The reviewer's name goes to the server the same way, which keeps it in a
// cookie. No third-party code; served from /static under the page's CSP.
(function () {
  'use strict';
  var root = document.querySelector('[data-testid="review"]');
  if (!root) {
    return;
  }
  var busy = false;
  function say(msg) {
    var el = document.querySelector('[data-testid="review-status"]');
    if (el) {
      el.textContent = msg;
    }
  }
  function post(url, body) {
    return fetch(url, {
      method: 'POST',
      credentials: 'same-origin',
      headers: {'Content-Type': 'application/json'},
      body: JSON.stringify(body)
    }).then(function (r) {
      return r.json().catch(function () { return {}; }).then(function (b) {
        if (!r.ok) {
          throw new Error(b.error || ('HTTP ' + r.status));
        }
        return b;
      });
    });
  }
  function label(choice) {
    var pair = document.querySelector('[data-testid="review-pair"]');
    if (!pair || busy) {
      return;
    }
    busy = true;
    say('Saving…');
    post(root.getAttribute('data-label-url'), {token: pair.getAttribute('data-token'), choice: choice})
      .then(function () { window.location.reload(); })
      .catch(function (e) { busy = false; say('Not saved: ' + e.message); });
  }
  var keys = {a: 'A', b: 'B', t: 'T', s: 'S'};
  document.addEventListener('keydown', function (e) {
    if (e.ctrlKey || e.metaKey || e.altKey || e.isComposing || e.repeat) {
      return;
    }
    var t = e.target;
    if (t && (t.tagName === 'INPUT' || t.tagName === 'TEXTAREA' || t.tagName === 'SELECT' || t.isContentEditable)) {
      return;
    }
    var choice = keys[(e.key || '').toLowerCase()];
    if (choice) {
      e.preventDefault();
      label(choice);
    }
  });
  Array.prototype.forEach.call(document.querySelectorAll('[data-choice]'), function (b) {
    b.addEventListener('click', function () { label(b.getAttribute('data-choice')); });
  });
  function reviewer(name) {
    return post(root.getAttribute('data-reviewer-url'), {name: name})
      .then(function () { window.location.reload(); })
      .catch(function (e) { window.alert('Not saved: ' + e.message); });
  }
  var form = document.querySelector('[data-testid="reviewer-form"]');
  if (form) {
    form.addEventListener('submit', function (e) {
      e.preventDefault();
      reviewer(form.querySelector('input[name="name"]').value);
    });
  }
  var change = document.querySelector('[data-testid="reviewer-change"]');
  if (change) {
    change.addEventListener('click', function () { reviewer(''); });
  }
}());
