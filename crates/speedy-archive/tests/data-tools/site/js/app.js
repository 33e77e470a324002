// Script-initiated requests: an image 150 ms after the script runs, JSON after 300 ms.
(function () {
  setTimeout(function () {
    var img = new Image();
    img.src = 'img/late.gif';
    window.__late = img;
  }, 150);
  setTimeout(function () {
    fetch('data/info.json').then(function (r) { return r.json(); });
  }, 300);
})();
