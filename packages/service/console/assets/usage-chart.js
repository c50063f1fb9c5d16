// Items per hour over the last day, drawn by uPlot from the data the page holds (never inline script).

const data = document.getElementById('usage-data');
const target = document.getElementById('usage-chart');
if (data && target && window.uPlot) {
  const hours = JSON.parse(data.textContent);
  const xs = hours.map((h) => Date.parse(h.hour) / 1000);
  const ys = hours.map((h) => h.items);
  const bars = uPlot.paths.bars({ size: [0.7, 40] });
  const chart = new uPlot(
    {
      width: Math.max(320, target.clientWidth),
      height: 240,
      tzDate: (ts) => uPlot.tzDate(new Date(ts * 1000), 'Etc/UTC'),
      scales: { y: { range: (_u, _min, max) => [0, Math.max(1, max)] } },
      series: [
        {},
        { label: 'items', stroke: '#2f6fd6', fill: 'rgba(47,111,214,0.35)', paths: bars, points: { show: false } },
      ],
      axes: [{}, { label: 'items' }],
    },
    [xs, ys],
    target,
  );
  target.dataset.points = String(xs.length);
  addEventListener('resize', () => chart.setSize({ width: Math.max(320, target.clientWidth), height: 240 }));
}
