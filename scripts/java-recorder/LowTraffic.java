import java.io.FileWriter;
import java.io.IOException;
import java.io.PrintWriter;
import java.util.ArrayList;
import java.util.List;
import java.util.Random;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.TimeUnit;

import com.alibaba.csp.sentinel.Entry;
import com.alibaba.csp.sentinel.SphU;
import com.alibaba.csp.sentinel.Tracer;
import com.alibaba.csp.sentinel.context.Context;
import com.alibaba.csp.sentinel.context.ContextUtil;
import com.alibaba.csp.sentinel.slots.block.BlockException;
import com.alibaba.csp.sentinel.slots.block.RuleConstant;
import com.alibaba.csp.sentinel.slots.block.degrade.DegradeRule;
import com.alibaba.csp.sentinel.slots.block.degrade.DegradeRuleManager;
import com.alibaba.csp.sentinel.slots.block.degrade.circuitbreaker.EventObserverRegistry;

/**
 * A Java Sentinel 1.8 service at low traffic, for sentinel-top's recording
 * lowtraffic-1.8.9 (docs/JAVA.md): three resources at 1 to 3 requests a
 * second from Poisson arrivals, each under one degrade rule of another
 * strategy (slow-ratio, error-ratio, error-count; timeWindow 2, 3 and 1 s),
 * failing in phases of random length, and every transition its breakers
 * make written to transitions.csv as ms,resource,grade,from,to,value.
 *
 * Usage: java LowTraffic OUT_DIR SECONDS SEED
 */
public final class LowTraffic {

    /** One resource's traffic: its rate, and how its requests go wrong. */
    static final class Service {
        final String name;
        final double rate; // requests a second
        final boolean slow; // failing requests are slow, not errors
        double badShare; // share of requests failing now

        Service(String name, double rate, boolean slow) {
            this.name = name;
            this.rate = rate;
            this.slow = slow;
        }
    }

    public static void main(String[] args) throws Exception {
        if (args.length != 3) {
            System.err.println("usage: LowTraffic OUT_DIR SECONDS SEED");
            System.exit(2);
        }
        String out = args[0];
        long seconds = Long.parseLong(args[1]);
        Random rnd = new Random(Long.parseLong(args[2]));

        List<DegradeRule> rules = new ArrayList<>();
        rules.add(rule("queryPrice", RuleConstant.DEGRADE_GRADE_RT, 100, 2).setSlowRatioThreshold(0.5)
            .setMinRequestAmount(2));
        rules.add(rule("checkStock", RuleConstant.DEGRADE_GRADE_EXCEPTION_RATIO, 0.5, 3).setMinRequestAmount(2));
        rules.add(rule("chargeCard", RuleConstant.DEGRADE_GRADE_EXCEPTION_COUNT, 1, 1).setMinRequestAmount(1));
        DegradeRuleManager.loadRules(rules);

        final PrintWriter csv = new PrintWriter(new FileWriter(out + "/transitions.csv"), true);
        EventObserverRegistry.getInstance().addStateChangeObserver("recorder", (from, to, rule, value) -> {
            // A regex rule names its pattern: the entry names the resource.
            String resource = rule.getResource();
            Context ctx = ContextUtil.getContext();
            if (ctx != null && ctx.getCurEntry() != null) {
                resource = ctx.getCurEntry().getResourceWrapper().getName();
            }
            synchronized (csv) {
                csv.println(System.currentTimeMillis() + "," + resource + "," + rule.getGrade() + "," + from + ","
                    + to + "," + value);
            }
        });

        Service[] services = {
            new Service("queryPrice", 2, true),
            new Service("checkStock", 1, false),
            new Service("chargeCard", 3, false),
        };
        ExecutorService pool = Executors.newFixedThreadPool(32);
        long end = System.currentTimeMillis() + seconds * 1000;
        List<Thread> threads = new ArrayList<>();
        for (Service s : services) {
            Random r = new Random(rnd.nextLong());
            Thread t = new Thread(() -> drive(s, r, pool, end), "arrivals-" + s.name);
            t.start();
            threads.add(t);
        }
        for (Thread t : threads) {
            t.join();
        }
        pool.shutdown();
        pool.awaitTermination(10, TimeUnit.SECONDS);
        // Let the metric timer write the last seconds.
        Thread.sleep(3000);
        csv.close();
        System.exit(0);
    }

    static DegradeRule rule(String resource, int grade, double count, int timeWindow) {
        DegradeRule r = new DegradeRule(resource).setGrade(grade).setCount(count).setTimeWindow(timeWindow);
        r.setStatIntervalMs(1000);
        return r;
    }

    /**
     * Sends s's requests until end: Poisson arrivals at its rate, through
     * phases of 15-45 s healthy (3 % failing) and 10-30 s failing (50-85 %).
     */
    static void drive(Service s, Random r, ExecutorService pool, long end) {
        long now = System.currentTimeMillis();
        long phaseEnd = now;
        boolean bad = true;
        while (now < end) {
            if (now >= phaseEnd) {
                bad = !bad;
                s.badShare = bad ? 0.5 + 0.35 * r.nextDouble() : 0.03;
                phaseEnd = now + (bad ? 10000 + r.nextInt(20000) : 15000 + r.nextInt(30000));
            }
            final boolean fail = r.nextDouble() < s.badShare;
            final long rt = s.slow && fail ? 150 + r.nextInt(250) : 5 + r.nextInt(40);
            pool.execute(() -> call(s.name, rt, fail && !s.slow));
            long gap = (long) (-Math.log(1 - r.nextDouble()) * 1000 / s.rate);
            sleep(gap);
            now = System.currentTimeMillis();
        }
    }

    static void call(String resource, long rt, boolean fail) {
        Entry e = null;
        try {
            e = SphU.entry(resource);
            sleep(rt);
            if (fail) {
                Tracer.traceEntry(new IOException("downstream failed"), e);
            }
        } catch (BlockException ex) {
            // blocked: counted by Sentinel
        } finally {
            if (e != null) {
                e.exit();
            }
        }
    }

    static void sleep(long ms) {
        try {
            Thread.sleep(ms);
        } catch (InterruptedException ex) {
            Thread.currentThread().interrupt();
        }
    }
}
