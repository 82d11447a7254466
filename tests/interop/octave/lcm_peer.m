% MATLAB's language through Nerve's lcm.jar, run by GNU Octave (tests/interop/test_java.py):
%   octave-cli lcm_peer.m JAR CLASSES SHM_URL UDPM_URL COUNT
% loads the jar and lcm-gen's Java classes of examples/types with javaaddpath, round-trips a laser_t on
% inproc://, then speaks LcmPeer's peer protocol on both URLs at once: subscribe to PY_* (a MessageAggregator per
% URL, as MATLAB users of LCM read messages), say READY, wait for a line on stdin, publish COUNT laser_t and path_t
% on OC_LASER / OC_PATH, and take COUNT of each from PY_*, every one checked field by field.
% Octave spells MATLAB's lcm.lcm.LCM(url) and exlcm.laser_t() as javaObject(...); the jar is the same.
1;

function lc = open_lcm(url)
  urls = javaArray('java.lang.String', 1);
  urls(1) = url;
  lc = javaObject('lcm.lcm.LCM', urls);
end

function m = laser(i)
  m = javaObject('exlcm.laser_t');
  m.utime = int64(1000000 + i);
  m.nranges = int32(mod(i, 5) + 1);
  % Octave hands a 1-element array to Java as a scalar, which no float[] field takes: pad it (encode writes the
  % first nranges only, so the bytes are the same). MATLAB needs no padding.
  m.ranges = single([(0:double(m.nranges) - 1) * 0.5 + i, 0]);
  m.rad0 = single(-1.5);
  m.radstep = single(0.25 * i);
end

function m = path(i)
  m = javaObject('exlcm.path_t');
  m.timestamp = int64(2000000 + i);
  n = mod(i, 3);
  m.num_waypoints = int32(n);
  waypoints = javaArray('exlcm.waypoint_t', max(n, 1));
  for k = 0:n - 1
    w = javaObject('exlcm.waypoint_t');
    w.id = sprintf('wp%d_%d', i, k);
    w.position = single([k, -k - 0.5]);
    waypoints(k + 1) = w;
  end
  m.waypoints = waypoints;
end

% (A Java field is copied into a variable before it is indexed: Octave reads d.ranges(1) as a method call.)
function ok = same_laser(d, i)
  n = mod(i, 5) + 1;
  ranges = double(d.ranges);
  ok = double(d.utime) == 1000000 + i && double(d.nranges) == n && isequal(ranges(:)', (0:n - 1) * 0.5 + i) ...
       && double(d.rad0) == -1.5 && double(d.radstep) == 0.25 * i;
end

function ok = same_path(d, i)
  n = mod(i, 3);
  ok = double(d.timestamp) == 2000000 + i && double(d.num_waypoints) == n;
  waypoints = d.waypoints;
  for k = 0:n - 1
    if ~ok
      break;
    end
    w = waypoints(k + 1);
    position = double(w.position);
    ok = strcmp(char(w.id), sprintf('wp%d_%d', i, k)) && isequal(position(:)', [k, -k - 0.5]);
  end
end

args = argv();
[jar, classes, shm, udpm] = args{1:4};
count = str2double(args{5});
javaaddpath(jar);
javaaddpath(classes);

% One LCM, its own messages: publish a laser_t and take it back from a MessageAggregator.
lc = open_lcm('inproc://octave');
agg = javaObject('lcm.lcm.MessageAggregator');
lc.subscribe('SELF_LASER', agg);
lc.publish('SELF_LASER', laser(7));
msg = agg.getNextMessage(5000);
if isempty(msg) || ~strcmp(char(msg.channel), 'SELF_LASER') || ~same_laser(javaObject('exlcm.laser_t', msg.data), 7)
  printf('INPROC FAILED\n');
  exit(1);
end
printf('INPROC OK\n');
lc.close();

names = {'shm', 'udpm'};
urls = {shm, udpm};
lcs = cell(1, 2);
aggs = cell(1, 2);
for u = 1:2
  lcs{u} = open_lcm(urls{u});
  aggs{u} = javaObject('lcm.lcm.MessageAggregator');
  lcs{u}.subscribe('PY_.*', aggs{u});
end
printf('READY\n');
fflush(stdout);
fgetl(stdin);
for i = 0:count - 1
  for u = 1:2
    lcs{u}.publish('OC_LASER', laser(i));
    lcs{u}.publish('OC_PATH', path(i));
  end
  pause(0.002);
end

all_ok = true;
for u = 1:2
  got = {};
  deadline = time() + 20;
  while numel(got) < 2 * count && time() < deadline
    msg = aggs{u}.getNextMessage(200);
    if isempty(msg)
      continue;
    end
    channel = char(msg.channel);
    if strcmp(channel, 'PY_LASER')
      d = javaObject('exlcm.laser_t', msg.data);
      i = double(d.utime) - 1000000;
      what = sprintf('laser %d', i);
      ok = same_laser(d, i);
    else
      d = javaObject('exlcm.path_t', msg.data);
      i = double(d.timestamp) - 2000000;
      what = sprintf('path %d', i);
      ok = same_path(d, i);
    end
    if ok
      if ~any(strcmp(got, what))
        got{end + 1} = what;
      end
      printf('GOT %s %s on %s\n', names{u}, what, channel);
    else
      all_ok = false;
      printf('BAD %s %s on %s\n', names{u}, what, channel);
    end
  end
  all_ok = all_ok && numel(got) == 2 * count;
end
for u = 1:2
  lcs{u}.close();
end
if all_ok
  printf('OCTAVE OK\n');
else
  printf('OCTAVE FAILED\n');
end
fflush(stdout);
exit(~all_ok);
