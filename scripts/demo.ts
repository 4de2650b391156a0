// Placeholder until the Pi adapter issue lands: the demo needs a real Pi session.
console.log("State Flow demo: not yet — the Pi adapter has not landed. Run `npm test` to see the temporal core and machines at work.");
