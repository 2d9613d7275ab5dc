import { describeDashboardOverAMillionSlices } from './dashboard-over-a-million-slices.js';

describeDashboardOverAMillionSlices('mysql');
