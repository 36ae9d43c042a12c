// Preload (node --require ./loopback.cjs ...) that makes every TCP server of the process
// listen on 127.0.0.1 only, whatever host it asks for, and report the port it got on stderr
// as "loopback-listening <port>". The reference servers listen on all interfaces and print
// the port they were asked for (not the one PORT=0 gave them); the tests need neither.
'use strict';
const net = require('net');
const listen = net.Server.prototype.listen;
net.Server.prototype.listen = function (...args) {
  if (args[0] !== null && typeof args[0] === 'object') {
    args[0] = { ...args[0], host: '127.0.0.1' };
  } else if (typeof args[0] === 'number' || (typeof args[0] === 'string' && /^\d+$/.test(args[0]))) {
    const rest = args.slice(1).filter((a) => typeof a !== 'string');
    args = [Number(args[0]), '127.0.0.1', ...rest];
  }
  this.once('listening', () => {
    const addr = this.address();
    if (addr && typeof addr === 'object') {
      process.stderr.write(`loopback-listening ${addr.port}\n`);
    }
  });
  return listen.apply(this, args);
};
